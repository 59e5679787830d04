# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
s, m = torch.std_mean(x, dim=1)
y = s + m
