# PyTorch: F.mse_loss(reduction='sum')
import torch.nn.functional as F
loss = F.mse_loss(input, target, reduction='sum')
