# PyTorch: F.elu selu celu leaky_relu silu hardswish hardtanh relu6 mish
import torch.nn.functional as F
y = F.elu(x) + F.selu(x) + F.celu(x, alpha=0.7) + F.leaky_relu(x, 0.2) + F.silu(x) + F.hardswish(x) + F.hardtanh(x) + F.relu6(2 * x) + F.mish(x) + F.hardsigmoid(x)
