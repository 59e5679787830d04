# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.erfinv(q) + torch.digamma(p) + torch.special.i0(p)
