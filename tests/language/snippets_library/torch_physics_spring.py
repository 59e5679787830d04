# PyTorch: mass-spring energy with torch.sum
import torch
def energy(x, v, k=3.0, m=2.0):
    return 0.5 * m * torch.sum(v ** 2) + 0.5 * k * torch.sum((x[1:] - x[:-1]) ** 2)
