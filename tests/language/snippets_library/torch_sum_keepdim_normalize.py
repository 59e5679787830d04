# PyTorch: x / x.sum(dim=-1, keepdim=True)
import torch
y = x / x.sum(dim=-1, keepdim=True)
