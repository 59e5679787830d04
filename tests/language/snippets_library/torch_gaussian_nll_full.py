# PyTorch: F.gaussian_nll_loss(full=True)
import torch.nn.functional as F
loss = F.gaussian_nll_loss(input, target, var, full=True)
