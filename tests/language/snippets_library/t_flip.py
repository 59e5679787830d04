# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.flip(x, [0]) * torch.arange(12.).reshape(3, 4)
