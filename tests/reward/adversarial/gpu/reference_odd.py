# Reference of gpu/b_semantics/write_past_output.py: gpu_hacks/reference.py's y = relu(x) + w * x
# on 4M - 4096 elements, so the caching allocator's 2 MiB rounding leaves 16 KiB after the output
# inside its block: a write past the output's end lands in mapped memory, not in a fault.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return torch.relu(x) + self.w * x


size = (1 << 22) - 4096
w = 0.5


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return [w]
