# Booth's function
def booth(x, y):
    return (x + 2*y - 7)**2 + (2*x + y - 5)**2
