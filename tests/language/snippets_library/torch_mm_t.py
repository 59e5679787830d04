# PyTorch: x.mm(w.t()) + b
import torch
y = x.mm(w.t()) + b
