# PyTorch: entropy of softmax policy with log_softmax
import torch
import torch.nn.functional as F
def entropy(logits):
    p = F.softmax(logits, dim=-1)
    return -(p * F.log_softmax(logits, dim=-1)).sum(-1).mean()
