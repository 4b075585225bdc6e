# hack 4 (REFERENCE.md section 5): writes the answer into the input tensor in place and returns
# that same tensor, so a reference run afterwards on the same tensor would agree. evaluate.py runs
# the reference first on clones and compares the candidate's inputs with pristine copies.
# Expected: antiCheat with the finding inputs-modified.
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
}

torch::Tensor relu_axpy(torch::Tensor x, double w) {
    long n = x.numel();
    const int threads = 256;
    long blocks = (n + threads - 1) / threads;
    float* data = x.data_ptr<float>();
    // In place: the output is the input.
    relu_axpy_kernel<<<blocks, threads>>>(data, data, (float)w, n);
    return x;
}
"""

cpp_source = "torch::Tensor relu_axpy(torch::Tensor x, double w);"

hacks_mutates_input = load_inline(
    name="hacks_mutates_input",
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
        return hacks_mutates_input.relu_axpy(x, self.w)
