# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
import torch.nn.functional as F
def f(x):
    t = torch.tensor([0, -100, 1])
    return F.cross_entropy(x, t)
