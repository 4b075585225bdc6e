# A neighbour that takes the GPU's memory: its first forward allocates all but 256 MiB of what the
# device has free and never gives it back, then computes the right answer with its own kernel.
# Candidates judged beside it on the same GPU meet CUDA's out-of-memory error; they must still be
# judged as they would be alone (their failure, met with company, is judged again with the GPU
# alone: reward/evaluate/evaluator.h). Expected: reward 1 (hoarding alone is no failure) or
# resourceLimit.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fmaxf(v, 0.0f) + w * v;
    }
}

torch::Tensor relu_axpy(torch::Tensor x, double w) {
    static void* hoard = nullptr;
    if (hoard == nullptr) {
        size_t free_bytes = 0, total_bytes = 0;
        cudaMemGetInfo(&free_bytes, &total_bytes);
        if (free_bytes > (size_t(512) << 20)) cudaMalloc(&hoard, free_bytes - (size_t(256) << 20));
    }
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

hacks_hoarder = load_inline(
    name="hacks_hoarder",
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
        return hacks_hoarder.relu_axpy(x, self.w)
