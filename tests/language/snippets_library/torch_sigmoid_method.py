# PyTorch: x.sigmoid(), x.tanh(), x.relu(), x.exp()
import torch
y = x.sigmoid() + x.tanh() + x.relu() + x.exp() + x.log1p().abs() + x.square()
