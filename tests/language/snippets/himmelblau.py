# Himmelblau's function, an optimization test function
def himmelblau(x, y):
    return (x**2 + y - 11)**2 + (x + y**2 - 7)**2
