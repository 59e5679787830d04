# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.inverse(a).sum() + torch.det(a) + torch.linalg.slogdet(a)[1]
