# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
def f(x):
    mask = torch.tensor([[True, False, False, True]] * 3)
    return torch.softmax(x.masked_fill(mask, float('-inf')), dim=-1)
