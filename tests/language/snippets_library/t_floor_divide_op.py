# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = (x * 3) // 1.3 * x
