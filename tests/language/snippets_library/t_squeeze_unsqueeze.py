# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = x.unsqueeze(0).squeeze(0) * x[:, 0:1].squeeze()[:, None]
