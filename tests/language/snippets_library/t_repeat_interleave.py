# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.repeat_interleave(x, 2, dim=0) * torch.arange(6.)[:, None]
