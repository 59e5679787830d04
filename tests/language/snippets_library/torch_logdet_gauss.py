# PyTorch: multivariate normal NLL with torch.logdet and torch.linalg.solve
import torch
def nll(x, L):
    S = L @ L.T + torch.eye(3)
    return 0.5 * (torch.logdet(S) + x @ torch.linalg.solve(S, x))
