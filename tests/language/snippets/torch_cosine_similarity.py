# PyTorch documentation, torch.nn.functional.cosine_similarity: "output = F.cosine_similarity(input1, input2)"
import torch
import torch.nn.functional as F

output = F.cosine_similarity(input1, input2)
