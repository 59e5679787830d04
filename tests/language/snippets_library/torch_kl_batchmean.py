# PyTorch: F.kl_div(reduction='batchmean')
import torch.nn.functional as F
loss = F.kl_div(F.log_softmax(a, dim=1), F.softmax(b, dim=1), reduction='batchmean')
