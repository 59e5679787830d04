# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.atan2(x, p) + torch.hypot(x, p)
