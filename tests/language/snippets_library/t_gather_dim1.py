# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
def f(x):
    idx = torch.tensor([[0, 2], [1, 1], [3, 0]])
    return torch.gather(x, 1, idx)
