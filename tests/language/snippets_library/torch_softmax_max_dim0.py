# PyTorch: softmax with torch.max(x, dim=1, keepdim=True)[0]
import torch
def softmax(x):
    maxes = torch.max(x, dim=1, keepdim=True)[0]
    x_exp = torch.exp(x - maxes)
    x_exp_sum = torch.sum(x_exp, dim=1, keepdim=True)
    probs = x_exp / x_exp_sum
    return probs
