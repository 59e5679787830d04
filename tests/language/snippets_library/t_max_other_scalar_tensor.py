# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.max(x, torch.tensor(0.0))
