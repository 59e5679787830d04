# PyTorch: torch.bmm batched matmul
import torch
y = torch.bmm(a, b).sum(dim=(1, 2))
