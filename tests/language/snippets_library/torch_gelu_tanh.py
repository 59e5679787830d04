# PyTorch: F.gelu(approximate='tanh')
import torch.nn.functional as F
y = F.gelu(x, approximate='tanh')
