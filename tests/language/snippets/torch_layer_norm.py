# PyTorch documentation, torch.nn.functional.layer_norm over the last dimension, with an affine transform
import torch
import torch.nn.functional as F

def forward(x, weight, bias):
    return F.layer_norm(x, (4,), weight, bias, eps=1e-5)
