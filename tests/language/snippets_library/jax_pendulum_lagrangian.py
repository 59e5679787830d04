# JAX: Lagrangian neural network pendulum
import jax.numpy as jnp
def lagrangian(q, q_dot, m=1.0, l=1.0, g=9.8):
    T = 0.5 * m * (l * q_dot) ** 2
    V = m * g * l * (1 - jnp.cos(q))
    return T - V
