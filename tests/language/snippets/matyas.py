# The Matyas function
def matyas(x, y):
    return 0.26 * (x**2 + y**2) - 0.48 * x * y
