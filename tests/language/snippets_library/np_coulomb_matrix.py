# NumPy: Coulomb energy with np.linalg.norm over axis
import numpy as np
def energy(r, q):
    d = np.linalg.norm(r[:, None, :] - r[None, :, :], axis=-1) + np.eye(len(q))
    return 0.5 * np.sum((q[:, None] * q[None, :]) * (1 - np.eye(len(q))) / d)
