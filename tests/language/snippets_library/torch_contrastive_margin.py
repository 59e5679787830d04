# PyTorch: contrastive loss with torch.clamp(margin - d, min=0.0)
import torch
import torch.nn.functional as F
def contrastive(x1, x2, label, margin=2.0):
    d = F.pairwise_distance(x1, x2)
    return torch.mean((1 - label) * torch.pow(d, 2) + label * torch.pow(torch.clamp(margin - d, min=0.0), 2))
