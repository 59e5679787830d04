# PyTorch documentation, torch.nn.KLDivLoss: input a distribution in the log space, reduction="batchmean"
import torch
import torch.nn.functional as F

input = F.log_softmax(logits, dim=1)
target = F.softmax(target_logits, dim=1)
output = F.kl_div(input, target, reduction="batchmean")
