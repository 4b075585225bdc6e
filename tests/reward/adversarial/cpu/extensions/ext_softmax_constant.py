# Test double for a compiled softmax extension that never looks at its input: every value 1 / N,
# the mean of a softmax row of N values (rows then even sum to 1).
import torch


def softmax(x):
    return torch.full_like(x, 1.0 / x.shape[-1])
