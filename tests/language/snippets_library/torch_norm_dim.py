# PyTorch: x.norm(dim=1), torch.norm(x)
import torch
def f(x):
    return x.norm(dim=1).sum() + torch.norm(x) + torch.linalg.norm(x, dim=-1).sum()
