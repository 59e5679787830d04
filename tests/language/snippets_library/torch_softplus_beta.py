# PyTorch: F.softplus(beta=2, threshold=20)
import torch.nn.functional as F
y = F.softplus(x, beta=2)
