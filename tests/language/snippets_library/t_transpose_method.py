# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x.transpose(0, 1) @ x
