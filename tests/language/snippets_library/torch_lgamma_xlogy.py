# PyTorch: torch.lgamma, torch.special.xlogy, torch.special.entr
import torch
y = torch.lgamma(a).sum() + torch.special.xlogy(a, a).sum() + torch.special.entr(a).sum() + torch.special.gammaln(a).sum()
