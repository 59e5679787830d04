# The three-hump camel function
def camel(x, y):
    return 2*x**2 - 1.05*x**4 + x**6/6 + x*y + y**2
