# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.maximum(x, p - 1) + torch.minimum(x, -p)
