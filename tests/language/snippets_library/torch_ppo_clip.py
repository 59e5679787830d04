# PyTorch: PPO clipped surrogate with torch.min and torch.clamp
import torch
def ppo(logp, old_logp, adv, clip=0.2):
    ratio = torch.exp(logp - old_logp)
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1 - clip, 1 + clip) * adv
    return -torch.min(surr1, surr2).mean()
