# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.triu(x, diagonal=1) + torch.tril(x, 1) * 3
