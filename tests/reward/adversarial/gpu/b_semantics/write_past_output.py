# class B (correctness semantics): a write past the output. The kernel writes every output value
# right, and 4096 more past its end (inside the allocator's block, so nothing faults).
# caught: reward 0 (the guard bytes after every tensor, from its exact end, guard_memory.py).
# reference: gpu/reference_odd.py (4M - 4096 elements: under PyTorch's caching allocator the
# write would land in the 16 KiB of slack its 2 MiB rounding leaves after the output)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fmaxf(v, 0.0f) + w * v;
    } else if (i < n + 4096) {
        y[i] = 1.0f;  // past the end
    }
}

torch::Tensor relu_axpy(torch::Tensor x, double w) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    relu_axpy_kernel<<<(n + 4096 + 255) / 256, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>(),
                                                      (float)w, n);
    return y;
}
"""

cpp_source = """
torch::Tensor relu_axpy(torch::Tensor x, double w);
"""

adv_write_past_output = load_inline(
    name="adv_write_past_output",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=['relu_axpy'],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return adv_write_past_output.relu_axpy(x, self.w)
