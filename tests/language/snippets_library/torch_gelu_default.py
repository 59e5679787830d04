# PyTorch: F.gelu exact by default
import torch.nn.functional as F
y = F.gelu(x)
