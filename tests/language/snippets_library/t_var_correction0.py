# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.var(x, dim=1, correction=0)
