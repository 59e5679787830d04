# Smooth L1 loss, as torch.nn.SmoothL1Loss documents it (beta = 1)
import torch

def smooth_l1(x, y, beta=1.0):
    diff = torch.abs(x - y)
    loss = torch.where(diff < beta, 0.5 * diff ** 2 / beta, diff - 0.5 * beta)
    return loss.mean()
