# class A (judge in the same process): returns a torch.Tensor subclass whose __torch_function__
# answers its own comparison: isclose/eq/equal/allclose say yes, ne says no, and subtracting
# anything from it gives zeros (so |got - want| is 0). The kernel is wrong on both outputs.
# caught: the verdict is not correct (the judge compares plain values it received, not objects
# of the candidate's classes).
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


class _Agreeable(torch.Tensor):
    """Equal to anything, and no different from anything."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in ("isclose", "eq", "__eq__", "ne", "__ne__", "sub", "__sub__", "__rsub__"):
            with torch._C.DisableTorchFunction():
                first = args[0]
                if name in ("isclose", "eq", "__eq__"):
                    return torch.ones_like(first, dtype=torch.bool)
                if name in ("ne", "__ne__"):
                    return torch.zeros_like(first, dtype=torch.bool)
                return torch.zeros_like(first)
        if name in ("equal", "allclose"):
            return True
        return super().__torch_function__(func, types, args, kwargs)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        y, s = ext.fused(x, self.scale, self.bias, idx)
        return y.as_subclass(_Agreeable), s.as_subclass(_Agreeable)
