# class A (judge in the same process): patches torch's comparisons process-wide: torch.isclose,
# torch.allclose, torch.equal, torch.eq/ne, Tensor.__eq__/__ne__/isclose/allclose and
# torch.testing.assert_close all report "equal". The kernel is wrong on both outputs.
# caught: the verdict is not correct (the judge's torch is not the candidate's).
# double: extensions/ext_wrong.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

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


def _everywhere(value):
    def answer(a, *args, **kwargs):
        if isinstance(a, torch.Tensor):
            return torch.full(a.shape, value, dtype=torch.bool, device=a.device)
        return value
    return answer


torch.isclose = torch.Tensor.isclose = _everywhere(True)
torch.eq = torch.Tensor.eq = torch.Tensor.__eq__ = _everywhere(True)
torch.ne = torch.Tensor.ne = torch.Tensor.__ne__ = _everywhere(False)
torch.allclose = torch.Tensor.allclose = torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        return ext.fused(x, self.scale, self.bias, idx)
