# PyTorch documentation, torch.nn.BCEWithLogitsLoss: a positive weight per class (pos_weight), functional form
import torch
import torch.nn.functional as F

def loss_fn(output, target, pos_weight):
    return F.binary_cross_entropy_with_logits(output, target, pos_weight=pos_weight)
