# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.quantile(x, 0.3, dim=1)
