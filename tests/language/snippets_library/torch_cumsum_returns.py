# PyTorch: torch.cumsum / flip returns-to-go
import torch
y = torch.flip(torch.cumsum(torch.flip(r, [0]), 0), [0])
