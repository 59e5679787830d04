# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.sign(x) * torch.sqrt(torch.abs(x)) + x.abs().sqrt()
