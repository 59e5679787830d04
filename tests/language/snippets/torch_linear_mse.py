# PyTorch tutorial style: a linear layer and its loss with torch.nn.functional
import torch.nn.functional as F

def loss_fn(x, weight, bias, y):
    y_pred = F.linear(x, weight, bias)
    return F.mse_loss(y_pred, y)
