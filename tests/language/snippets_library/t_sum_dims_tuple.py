# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.sum(x, dim=(0, 1)) + x.sum(dim=[1]).sum()
