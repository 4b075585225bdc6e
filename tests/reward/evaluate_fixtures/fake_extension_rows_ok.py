# Test double for a compiled extension: relu(x) * scale for any shape.
import torch


def rows(x, scale):
    return torch.relu(x) * scale
