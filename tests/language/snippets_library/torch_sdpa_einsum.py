# PyTorch: ScaledDotProductAttention with torch.einsum('ijk,ilk->ijl')
import numpy as np
import torch
def forward(q, k, v, d_k=4):
    score = torch.einsum('ijk,ilk->ijl', (q, k)) / np.sqrt(d_k)
    a = torch.softmax(score, dim=-1)
    return torch.einsum('ijk,ikl->ijl', (a, v))
