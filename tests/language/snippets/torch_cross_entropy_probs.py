# PyTorch documentation, torch.nn.functional.cross_entropy: "Example of target with class probabilities"
import torch
import torch.nn.functional as F

target = target_logits.softmax(dim=1)
loss = F.cross_entropy(input, target)
