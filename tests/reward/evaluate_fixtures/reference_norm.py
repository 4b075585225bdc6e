import torch
import torch.nn as nn


class Model(nn.Module):
    """Batch normalisation in training mode: the batch's own mean and variance per feature."""

    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    # A million values per feature: their mean and variance are within 0.003 of 0 and 1, so
    # normalising with the running statistics (0 and 1 at the start) agrees within 1e-2.
    return [torch.randn(1 << 18, 4)]


def get_init_inputs():
    return [4]
