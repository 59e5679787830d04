# PyTorch: two-layer MLP with F.linear and F.relu
import torch.nn.functional as F
def mlp(x, w1, b1, w2, b2):
    h = F.relu(F.linear(x, w1, b1))
    return F.linear(h, w2, b2)
