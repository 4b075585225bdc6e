import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        return x * self.scale + self.bias, idx.sum()


def get_inputs():
    return [torch.randn(4, 8), torch.randint(0, 10, (5,))]


def get_init_inputs():
    return [3.0]
