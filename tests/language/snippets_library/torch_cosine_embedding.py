# PyTorch: F.cosine_similarity(dim=-1) 1 - cos
import torch.nn.functional as F
loss = (1 - F.cosine_similarity(a, b, dim=-1)).mean()
