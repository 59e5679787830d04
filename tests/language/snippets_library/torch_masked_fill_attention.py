# PyTorch: annotated transformer masked_fill(mask == 0, -1e9)
import math
import torch
def attention(query, key, value):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    mask = torch.tril(torch.ones(3, 3))
    scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value)
