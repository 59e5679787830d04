# PyTorch: multihead split with view and permute
import torch
def f(x):
    b, t, c = x.shape
    h = x.view(b, t, 2, c // 2).permute(0, 2, 1, 3)
    att = h @ h.transpose(-2, -1)
    return att.softmax(dim=-1).sum()
