# PyTorch: x.clamp(min=1e-6).log()
import torch
y = (x.clamp(min=1e-6).log() * w).sum()
