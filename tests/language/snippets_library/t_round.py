# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.round(x * 2.5) * x
