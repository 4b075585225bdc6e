# class A (judge in the same process): forges the result line by patching json.JSONEncoder.encode
# (what json.dumps calls with any non-default option). The kernel is wrong.
# caught: the verdict is not correct (the result is written by a process the candidate does not
# run in).
# double: extensions/ext_wrong.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
import json

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


def _forged(result):
    """A result that says correct."""
    if isinstance(result, dict) and "correct" in result and "failure" in result:
        result = dict(result, failure="none", detail="", correct=True, findings=[],
                      trials=max(1, int(result.get("trials") or 0)))
    return result


_real_encode = json.JSONEncoder.encode


def _encode(self, obj):
    return _real_encode(self, _forged(obj))


json.JSONEncoder.encode = _encode


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        return ext.fused(x, self.scale, self.bias, idx)
