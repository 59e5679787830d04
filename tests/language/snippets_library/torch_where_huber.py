# PyTorch: torch.where huber
import torch
def huber(x, y, delta=1.0):
    diff = torch.abs(x - y)
    return torch.where(diff < delta, 0.5 * diff ** 2, delta * (diff - 0.5 * delta)).mean()
