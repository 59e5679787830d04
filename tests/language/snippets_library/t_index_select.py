# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
def f(x):
    return torch.index_select(x, 1, torch.tensor([0, 2, 2]))
