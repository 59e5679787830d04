# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
def f(a):
    s = a @ a.T + torch.eye(3)
    return torch.linalg.cholesky(s)
