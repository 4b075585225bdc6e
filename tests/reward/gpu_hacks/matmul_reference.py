# The reference of the timing test (tests/reward/hacks_gpu_test.cc,
# TimedCandidatesHaveTheGpuToThemselves): a float32 matrix product of 2048 x 2048. Its candidate
# (matmul_honest.py) runs for milliseconds a call, far above the judge clock's resolution (a tenth
# of a millisecond on the H100 with inputs and digests in the loop), so that its timed mean says
# how much of the GPU it had, not where the clock's resolution fell.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


n = 2048


def get_inputs():
    return [torch.randn(n, n), torch.randn(n, n)]


def get_init_inputs():
    return []
