# PyTorch: torch.mean(x, dim=-1) and torch.sum(x, -1)
import torch
y = torch.mean(x, dim=-1) + torch.sum(x, -1) + torch.prod(x, 1)
