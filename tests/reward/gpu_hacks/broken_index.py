# A deliberately broken kernel: the thread index is off by one, so element i gets the value of
# element i - 1 and y[0] is never written.
# Expected: incorrect.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x + 1;
    if (i < n) {
        float v = x[i - 1];
        y[i] = fmaxf(v, 0.0f) + w * v;
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

hacks_broken_index = load_inline(
    name="hacks_broken_index",
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
        return hacks_broken_index.relu_axpy(x, self.w)
