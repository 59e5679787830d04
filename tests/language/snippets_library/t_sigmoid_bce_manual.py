# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = -(t * torch.log(torch.sigmoid(x)) + (1 - t) * torch.log(1 - torch.sigmoid(x))).mean()
