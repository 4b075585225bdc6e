# expect: state-in-forward
# cheat: caches the output across calls
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>

__global__ void scale_kernel(const float* x, float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}

torch::Tensor scale_cuda(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)s, n);
    return y;
}
"""

cpp_src = "torch::Tensor scale_cuda(torch::Tensor x, double s);"

ext = load_inline(
    name="scale_ext",
    cpp_sources=cpp_src,
    cuda_sources=cuda_src,
    functions=["scale_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        if getattr(self, "_cached", None) is None:
            self._cached = ext.scale_cuda(x, 2.0)
        return self._cached
