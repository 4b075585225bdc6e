# class B (correctness semantics): input-independent output that every reference value is within
# atol of. The reference is a softmax over rows of 65536 values (each about 1.5e-5); this kernel
# returns the constant 1 / N (the mean of a softmax row) whatever the input.
# caught: the verdict is not correct (an output that does not depend on the input, or that is
# judged only against an atol larger than every reference value, proves nothing).
# double: extensions/ext_softmax_constant.py; reference: cpu/reference_softmax_wide.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

// One block per row: the row's max, then the sum of exponentials, then the outputs.
__global__ void softmax_kernel(const float* x, float* y, long cols) {
    extern __shared__ float partial[];
    const float* row = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;
    float m = -INFINITY;
    for (long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    partial[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + s]);
        __syncthreads();
    }
    m = partial[0];
    __syncthreads();
    float sum = 0;
    for (long c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    sum = partial[0];
    for (long c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) / sum;
}

torch::Tensor softmax(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long cols = x.size(-1), rows = x.numel() / cols;
    softmax_kernel<<<rows, 256, 256 * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

cpp_source = "torch::Tensor softmax(torch::Tensor x);"

softmax_ext = load_inline(name="softmax_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                          functions=["softmax"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return softmax_ext.softmax(x)
