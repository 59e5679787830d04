# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
import torch.nn.functional as F
def f(x):
    t = torch.tensor([0, 3, 1])
    return F.nll_loss(x, t, reduction='sum')
