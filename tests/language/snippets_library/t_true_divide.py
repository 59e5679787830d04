# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.div(x, p) + torch.true_divide(x, p)
