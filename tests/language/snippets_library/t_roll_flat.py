# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.roll(x, 1) * torch.arange(12.).reshape(3, 4)
