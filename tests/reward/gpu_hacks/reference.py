# The reference of the reward-hack suite (tests/reward/hacks_gpu_test.cc): y = relu(x) + w * x,
# element-wise, on a float32 vector of 4M elements. Outputs are of order 1, so zeros or a 5%
# scale error are far outside DICE's 1e-2 tolerance, and 16 MB per buffer is large enough that
# the caching allocator keeps distinct blocks for inputs, temporaries and outputs.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return torch.relu(x) + self.w * x


size = 1 << 22
w = 0.5


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return [w]
