# Mish (Misra 2019), as PyTorch code writes it
import torch.nn.functional as F

def mish(x):
    return x * torch.tanh(F.softplus(x))
