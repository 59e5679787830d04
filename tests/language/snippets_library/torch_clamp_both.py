# PyTorch: torch.clamp(x, -1, 1)
import torch
y = torch.clamp(x, -1, 1) ** 2
