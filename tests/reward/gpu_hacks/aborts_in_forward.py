# A neighbour whose process dies in forward (abort()). Candidates beside it run in their own
# processes and must be judged as they would be alone. Expected: crashed or runtimeError.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
#include <cstdlib>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fmaxf(v, 0.0f) + w * v;
    }
}

torch::Tensor relu_axpy(torch::Tensor x, double w) {
    std::abort();
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x: CUDA float32 expected");
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

hacks_aborts = load_inline(
    name="hacks_aborts",
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
        return hacks_aborts.relu_axpy(x, self.w)
