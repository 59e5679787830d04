# JAX documentation, "The Sharp Bits": out-of-place array updates with .at
import jax.numpy as jnp

new_add_jax_array = jax_array.at[::2, 3:].add(7.)
