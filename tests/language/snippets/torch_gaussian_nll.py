# PyTorch documentation, torch.nn.GaussianNLLLoss: heteroscedastic variance, functional form
import torch
import torch.nn.functional as F

loss = F.gaussian_nll_loss(input, target, var)
