# PyTorch: FocalLoss with torch.sigmoid and view(-1)
import torch
import torch.nn.functional as F
def forward(inputs, targets, alpha=2, gamma=0.8):
    inputs = torch.sigmoid(inputs)
    inputs = inputs.view(-1)
    targets = targets.view(-1)
    bce = F.binary_cross_entropy(inputs, targets, reduction='mean')
    bce_exp = torch.exp(-bce)
    focal_loss = alpha * (1 - bce_exp)**gamma * bce
    return focal_loss
