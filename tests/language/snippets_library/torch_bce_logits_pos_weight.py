# PyTorch: nn.BCEWithLogitsLoss(pos_weight) via F
import torch
import torch.nn.functional as F
pos_weight = torch.tensor([2.0, 1.0, 0.5])
loss = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight)
