# Reference for the below-atol class (tests/reward/adversarial): softmax over rows of 65536
# values. Each output is about 1.5e-5 (the largest below 1e-3), so with atol = rtol = 1e-2 an
# output of zeros, or any constant in [0, 1e-2], is "allclose" to it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(4, 65536)]


def get_init_inputs():
    return []
