# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.pow(p, x) + p ** 0.5
