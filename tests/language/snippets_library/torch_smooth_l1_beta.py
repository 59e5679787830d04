# PyTorch: F.smooth_l1_loss(beta=0.5)
import torch.nn.functional as F
loss = F.smooth_l1_loss(input, target, beta=0.5)
