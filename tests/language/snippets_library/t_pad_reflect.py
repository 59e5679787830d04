# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch.nn.functional as F
y = F.pad(x[None], (1, 1), mode='reflect')
