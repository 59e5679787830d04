# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch.nn.functional as F
y = F.normalize(x, p=1, dim=0)
