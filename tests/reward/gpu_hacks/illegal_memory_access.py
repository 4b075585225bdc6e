# A kernel that writes far outside its output (2^36 floats = 256 GiB past it: unmapped on any
# GPU), so the launch ends with an illegal-address error that poisons this process's CUDA
# context. It must fail only its own candidate: other candidates evaluated on the same GPU at the
# same time run in their own processes and contexts.
# Expected: runtimeError (the error surfaces at the synchronize after forward) or crashed.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fmaxf(v, 0.0f) + w * v;
    }
    if (i == 0) {
        y[n + (1L << 36)] = 1.0f;
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

hacks_illegal_memory_access = load_inline(
    name="hacks_illegal_memory_access",
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
        return hacks_illegal_memory_access.relu_axpy(x, self.w)
