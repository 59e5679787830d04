# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.nan_to_num(torch.log(x.abs()) * x)
