# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = (x > 0).float() * x + (x < 0).double() * 2 * x
