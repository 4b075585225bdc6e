# Test double for a compiled extension that returns the uniform distribution 1/N: close to a wide
# softmax in absolute terms, input-independent.
import torch


def softmax(x):
    return torch.full_like(x, 1.0 / x.shape[-1])
