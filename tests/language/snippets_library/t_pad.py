# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch.nn.functional as F
y = F.pad(x, (1, 2)) * 2
