# PyTorch: attention with torch.matmul(q, k.transpose(-2, -1)) / math.sqrt
import math
import torch
import torch.nn.functional as F
def attention(query, key, value):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    p_attn = F.softmax(scores, dim=-1)
    return torch.matmul(p_attn, value)
