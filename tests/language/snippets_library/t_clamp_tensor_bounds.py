# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.clamp(x, min=-p, max=p)
