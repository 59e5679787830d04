# Swish / SiLU with a trainable beta (Ramachandran et al. 2017)
def swish(x, beta=1.0):
    return x * tf.sigmoid(beta * x)
