# PyTorch: F.huber_loss(delta=1.5)
import torch.nn.functional as F
loss = F.huber_loss(input, target, delta=1.5)
