# PyTorch: F.poisson_nll_loss
import torch.nn.functional as F
loss = F.poisson_nll_loss(log_rate, target)
