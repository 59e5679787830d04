# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.sum(torch.sin(a * torch.linspace(0, 1, 5)))
