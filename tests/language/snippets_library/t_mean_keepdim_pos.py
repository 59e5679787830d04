# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.mean(x, 1, True) + x.sum(0)
