# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.where(x > 0, x, torch.zeros_like(x)) + torch.where(x > 0, 1.0, 0.0) * x
