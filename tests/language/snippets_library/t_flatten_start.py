# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.flatten(x[None], 1) * 2
