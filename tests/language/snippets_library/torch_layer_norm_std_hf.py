# PyTorch: annotated transformer LayerNorm with x.std(-1) (unbiased)
import torch
def forward(x, a_2, b_2, eps=1e-6):
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True)
    return a_2 * (x - mean) / (std + eps) + b_2
