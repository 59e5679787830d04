# NumPy: Student-t log density with scipy.special.gammaln
import numpy as np
from scipy.special import gammaln
def logpdf(x, nu):
    return np.sum(gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - (nu + 1) / 2 * np.log1p(x**2 / nu))
