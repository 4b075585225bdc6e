# class A (judge in the same process): reads the reference's output out of the judge's stack
# frames (sys._getframe, walking f_back and f_locals) and returns a copy of it. The kernel is
# wrong; only the stolen answer is right.
# caught: the verdict is not correct (the reference's output never exists in the process that
# runs candidate code).
# double: extensions/ext_wrong.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
import sys

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


def _looks_like_answer(value, x, idx):
    """The reference's output for these inputs: (tensor shaped like x, idx.sum())."""
    return (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, torch.Tensor) for v in value)
            and tuple(value[0].shape) == tuple(x.shape) and value[0] is not x
            and value[0].dtype == x.dtype and value[1].dim() == 0
            and int(value[1]) == int(idx.sum()))


def _stolen_answer(x, idx):
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if _looks_like_answer(value, x, idx):
                return value
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        stolen = _stolen_answer(x, idx)
        if stolen is not None:
            return stolen[0].to(x.device).clone(), stolen[1].to(x.device).clone()
        return ext.fused(x, self.scale, self.bias, idx)
