# Test double for a compiled extension specialised to the task's shape: it computes the first 4
# rows (the task's batch_size) and leaves the others zero, so it is right only at that shape.
import torch


def rows(x, scale):
    out = torch.zeros_like(x)
    out[:4] = torch.relu(x[:4]) * scale
    return out
