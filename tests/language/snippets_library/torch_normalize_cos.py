# PyTorch: F.normalize then cosine logits (SimCLR)
import torch
import torch.nn.functional as F
def f(z1, z2, t=0.5):
    z1 = F.normalize(z1, dim=1)
    z2 = F.normalize(z2, dim=1)
    logits = z1 @ z2.T / t
    labels = torch.arange(3)
    return F.cross_entropy(logits, labels)
