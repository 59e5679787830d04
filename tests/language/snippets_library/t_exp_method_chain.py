# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x.exp().log1p().mean(dim=-1, keepdim=True)
