# PyTorch: hinge GAN discriminator loss with F.relu
import torch
import torch.nn.functional as F
loss = torch.mean(F.relu(1. - d_real)) + torch.mean(F.relu(1. + d_fake))
