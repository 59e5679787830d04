# PyTorch: F.cross_entropy(label_smoothing=0.1)
import torch
import torch.nn.functional as F
target = torch.tensor([1, 0, 3])
loss = F.cross_entropy(logits, target, label_smoothing=0.1)
