# Focal loss (Lin et al., RetinaNet), for the probability of the true class
import numpy as np

def focal_loss(p, alpha=0.25, gamma=2.0):
    return np.sum(-alpha * (1 - p) ** gamma * np.log(p))
