# PyTorch: LLaMA RMSNorm with pow(2).mean(-1, keepdim=True) and torch.rsqrt
import torch
def forward(x, weight, eps=1e-6):
    norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return norm * weight
