# Test double for a compiled extension that returns zeros: within atol 1e-2 of every value of a
# softmax over 65536 columns, but computed from nothing.
import torch


def softmax(x):
    return torch.zeros_like(x)
