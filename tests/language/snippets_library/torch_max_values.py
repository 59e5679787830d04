# PyTorch: torch.max(x, dim=1).values
import torch
y = torch.max(x, dim=1).values + x.amax(dim=0).sum() + x.amin(1)
