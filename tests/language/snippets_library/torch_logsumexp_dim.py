# PyTorch: torch.logsumexp(x, dim=1)
import torch
y = torch.logsumexp(x, dim=1) - x[:, 0]
