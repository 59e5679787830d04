# PyTorch: WGAN critic loss means
import torch
loss = torch.mean(fake) - torch.mean(real)
