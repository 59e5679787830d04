# PyTorch: Hinton distillation loss with T**2
import torch.nn.functional as F
def kd(student_logits, teacher_logits, T=2.0):
    return F.kl_div(F.log_softmax(student_logits / T, dim=-1), F.softmax(teacher_logits / T, dim=-1), reduction='batchmean') * T * T
