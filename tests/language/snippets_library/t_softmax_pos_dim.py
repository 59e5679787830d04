# PyTorch: a spelling whose meaning differs between libraries, checked against PyTorch
import torch.nn.functional as F
y = F.softmax(x, 1) * F.log_softmax(x, 0)
