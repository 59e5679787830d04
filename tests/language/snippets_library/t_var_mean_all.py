# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
v, m = torch.var_mean(x)
y = v * m
