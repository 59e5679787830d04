# PyTorch: x.pow(2).sum(1).sqrt()
import torch
y = (x.pow(2).sum(1) + 1e-8).sqrt().mean()
