# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x.std() + x.var() + x.mean()
