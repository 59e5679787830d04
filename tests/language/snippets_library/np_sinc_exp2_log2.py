# NumPy: np.sinc, np.exp2, np.log2, np.cbrt, np.logaddexp2
import numpy as np
y = np.sinc(x) + np.exp2(x) + np.log2(x + 3) + np.cbrt(x + 3) + np.logaddexp2(x, 1.0)
