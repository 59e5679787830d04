# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x.permute(2, 0, 1) * torch.arange(24.).reshape(4, 2, 3)
