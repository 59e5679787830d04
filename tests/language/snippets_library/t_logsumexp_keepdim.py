# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x - torch.logsumexp(x, 1, keepdim=True)
