# class B (correctness semantics): hack 4 aimed at the reference itself. ModelNew's constructor
# finds the reference's Model among the garbage collector's objects and raises its bias by 0.5,
# so that the reference agrees with a kernel that is off by 0.5.
# caught: the verdict is not correct (the reference model lives where the candidate cannot
# reach it).
# double: extensions/ext_offset.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
import gc

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


def _raise_reference_bias():
    for obj in gc.get_objects():
        if isinstance(obj, nn.Module) and type(obj).__name__ == "Model" and \
                isinstance(getattr(obj, "bias", None), torch.Tensor):
            with torch.no_grad():
                obj.bias += 0.5


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))
        _raise_reference_bias()  # the reference was built just before this model

    def forward(self, x, idx):
        return ext.fused(x, self.scale, self.bias, idx)
