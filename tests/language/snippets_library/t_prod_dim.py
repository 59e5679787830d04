# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.prod(x, 1) + x.prod(0).sum()
