# NumPy: N-body gravitational potential energy
import numpy as np
def potential(pos, mass, G=1.0, soft=0.1):
    dx = pos[:, 0:1].T - pos[:, 0:1]
    dy = pos[:, 1:2].T - pos[:, 1:2]
    inv_r = 1.0 / np.sqrt(dx**2 + dy**2 + soft**2)
    return G * np.sum(np.sum(np.triu(-(mass * mass.T) * inv_r, 1)))
