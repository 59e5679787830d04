# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = (x * (x == x.max(dim=1, keepdim=True)[0])).sum()
