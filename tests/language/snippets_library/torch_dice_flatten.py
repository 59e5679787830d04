# PyTorch: segmentation DiceLoss.forward with torch.flatten
import torch
def forward(pred, mask):
    pred = torch.flatten(pred)
    mask = torch.flatten(mask)
    counter = (pred * mask).sum()
    denum = pred.sum() + mask.sum() + 1e-8
    dice = (2*counter)/denum
    return 1 - dice
