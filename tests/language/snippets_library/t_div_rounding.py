# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.div(x * 3, 1.3, rounding_mode='floor') * x + torch.div(x * 3, 1.3, rounding_mode='trunc') * x
