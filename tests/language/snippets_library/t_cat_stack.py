# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch
y = torch.cat([x, x * 2], 0).sum(0) + torch.stack((x, x), dim=1).sum(1).sum(0) + torch.cat((x, x), dim=1).sum(1).sum()
