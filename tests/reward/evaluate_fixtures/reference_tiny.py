import torch
import torch.nn as nn


# A softmax over a very wide row: every value is ~1/65536, far below DICE's atol of 1e-2, so an
# output of zeros would pass an unscaled comparison.
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(2, 65536)]


def get_init_inputs():
    return []
