# PyTorch: focal_loss over F.binary_cross_entropy_with_logits
import torch
import torch.nn.functional as F
def focal_loss(inputs, targets, alpha=.25, gamma=2):
    BCE = F.binary_cross_entropy_with_logits(inputs, targets)
    BCE_EXP = torch.exp(-BCE)
    loss = alpha * (1-BCE_EXP)**gamma * BCE
    return loss
