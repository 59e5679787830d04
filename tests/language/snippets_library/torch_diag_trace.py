# PyTorch: torch.trace, torch.diag, torch.diagonal
import torch
y = torch.trace(a @ a.T) + torch.diag(a).sum() + torch.diagonal(a, 0).pow(2).sum()
