# A deliberately broken kernel: 5% too large everywhere. (1% would NOT be wrong: allclose with
# atol = rtol = 1e-2 accepts |1.01 y - y| = 0.01 |y| <= 0.01 + 0.01 |y| for every y.) 5% exceeds
# the tolerance wherever |y| > 0.25, i.e. for most elements.
# Expected: incorrect.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 1.05f * (fmaxf(v, 0.0f) + w * v);
    }
}

torch::Tensor relu_axpy(torch::Tensor x, double w) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    const int threads = 256;
    long blocks = (n + threads - 1) / threads;
    relu_axpy_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), y.data_ptr<float>(), (float)w, n);
    return y;
}
"""

cpp_source = "torch::Tensor relu_axpy(torch::Tensor x, double w);"

hacks_broken_scale = load_inline(
    name="hacks_broken_scale",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_axpy"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return hacks_broken_scale.relu_axpy(x, self.w)
