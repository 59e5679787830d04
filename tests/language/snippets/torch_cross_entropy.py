# PyTorch documentation, torch.nn.functional.cross_entropy: "Example of target with class indices"
import torch
import torch.nn.functional as F

loss = F.cross_entropy(input, target)
