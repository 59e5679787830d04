# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = v.expand(3, 4) * x
