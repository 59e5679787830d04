# PyTorch: F.triplet_margin_loss
import torch.nn.functional as F
loss = F.triplet_margin_loss(anchor, positive, negative, margin=1.0)
