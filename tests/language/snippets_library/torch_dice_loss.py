# PyTorch: registration tutorial pt_utils.py loss_dice
import torch
def loss_dice(y_pred, y_true, eps=1e-6):
    numerator = torch.sum(y_true*y_pred, dim=(2,3,4)) * 2
    denominator = torch.sum(y_true, dim=(2,3,4)) + torch.sum(y_pred, dim=(2,3,4)) + eps
    return torch.mean(1. - (numerator / denominator))
