# PyTorch: attention pooling with softmax over dim=1
import torch
def pool(h, w):
    scores = torch.matmul(h, w)
    alpha = torch.softmax(scores, dim=1)
    return torch.sum(alpha.unsqueeze(-1) * h, dim=1)
