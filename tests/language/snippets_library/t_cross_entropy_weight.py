# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
import torch.nn.functional as F
def f(x):
    t = torch.tensor([0, 3, 1])
    w = torch.tensor([1.0, 2.0, 0.5, 1.5])
    return F.cross_entropy(x, t, weight=w)
