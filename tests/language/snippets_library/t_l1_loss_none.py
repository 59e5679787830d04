# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch.nn.functional as F
y = F.l1_loss(x, p, reduction='none')
