import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies the input by a constant."""

    def __init__(self, scale):
        super(Model, self).__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return [2.5]
