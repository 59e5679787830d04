# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.sum(torch.arange(0, 1, 0.3) * a)
