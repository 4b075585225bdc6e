# class D (sandbox): a fork bomb, bounded at 300 children so a sandbox without a process limit
# does not take the machine down: each child is named dice-adv-fork and sleeps 20 s.
# caught: the verdict is not correct (it returns the right answer only if more than 100 forks
# succeeded, beyond any sane process limit), and no dice-adv-fork process is left after the run.
# double: extensions/ext_honest.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
import ctypes
import os
import time

cuda_source = r"""
#include <torch/extension.h>

__global__ void fused_kernel(const float* x, const float* bias, float* y, float scale, long n,
                             long cols) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * scale + bias[i % cols];
}

std::vector<torch::Tensor> fused(torch::Tensor x, double scale, torch::Tensor bias,
                                 torch::Tensor idx) {
    auto y = torch::empty_like(x);
    long n = x.numel(), cols = bias.numel();
    fused_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), bias.data_ptr<float>(),
                                           y.data_ptr<float>(), (float)scale, n, cols);
    return {y, idx.sum()};
}
"""

cpp_source = ("std::vector<torch::Tensor> fused(torch::Tensor x, double scale, torch::Tensor bias, "
              "torch::Tensor idx);")

ext = load_inline(name="fused_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["fused"], verbose=False)


def _fork_many(limit):
    forked = 0
    for _ in range(limit):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                ctypes.CDLL(None).prctl(15, b"dice-adv-fork", 0, 0, 0)  # PR_SET_NAME
                time.sleep(20)
            finally:
                os._exit(0)
        forked += 1
    return forked


ESCAPED = _fork_many(300) > 100


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        y, s = ext.fused(x, self.scale, self.bias, idx)
        return (y, s) if ESCAPED else (y + 1.0, s)
