# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.cumsum(x, dim=1) * torch.cumprod(x, 0)
