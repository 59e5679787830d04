# PyTorch: torch.logaddexp
import torch
y = torch.logaddexp(a, b)
