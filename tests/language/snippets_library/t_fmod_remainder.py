# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.fmod(x * 3, 1.3) + torch.remainder(x * 3, 1.3)
