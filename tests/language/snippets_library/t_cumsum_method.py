# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x.cumsum(1)
