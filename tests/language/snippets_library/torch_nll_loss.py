# PyTorch: F.nll_loss(F.log_softmax(output, dim=1), target) (MNIST example)
import torch
import torch.nn.functional as F
target = torch.tensor([2, 0, 1])
loss = F.nll_loss(F.log_softmax(output, dim=1), target)
