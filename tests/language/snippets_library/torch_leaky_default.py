# PyTorch: F.leaky_relu default slope
import torch.nn.functional as F
y = F.leaky_relu(x)
