# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x.T * torch.arange(24.).reshape(4, 3, 2)
