# PyTorch: d2l batch_norm training branch
import torch
def batch_norm(X, gamma, beta, eps=1e-5):
    mean = X.mean(dim=0)
    var = ((X - mean) ** 2).mean(dim=0)
    X_hat = (X - mean) / torch.sqrt(var + eps)
    return gamma * X_hat + beta
