# PyTorch: F.margin_ranking_loss
import torch.nn.functional as F
loss = F.margin_ranking_loss(x1, x2, y, margin=0.1)
