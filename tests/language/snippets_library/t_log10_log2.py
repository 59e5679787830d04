# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.log10(p) + torch.log2(p) + p.log10()
