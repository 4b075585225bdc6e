# expect: pass
# kernel_infilling_dev.json id 3139 (cuda_code), a published correct candidate.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void count_nonzero_kernel(const float* input, int* count, int num_elements) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < num_elements) {
        if (input[idx] != 0.0f) {
            atomicAdd(count, 1);
        }
    }
}

__global__ void fill_indices_kernel(const float* input, int64_t* indices, const int64_t* sizes, const int64_t* strides, int ndim, int num_elements, int* count) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < num_elements) {
        if (input[idx] != 0.0f) {
            int pos = atomicAdd(count, 1);
            int64_t offset = idx;
            for (int d = 0; d < ndim; ++d) {
                indices[pos * ndim + d] = (offset / strides[d]) % sizes[d];
                offset %= strides[d];
            }
        }
    }
}

__global__ void logical_or_kernel(const int64_t* first, const int64_t* last, bool* out, int ndim) {
    int idx = threadIdx.x;
    if (idx < ndim) {
        out[idx] = (first[idx] != 0) || (last[idx] != 0);
    }
}

__global__ void mean_kernel(const float* input, float* output, int64_t reduction_size, int64_t reduction_stride, int64_t output_numel) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < output_numel) {
        float sum = 0.0f;
        for (int64_t k = 0; k < reduction_size; ++k) {
            sum += input[idx + k * reduction_stride];
        }
        output[idx] = sum / reduction_size;
    }
}

torch::Tensor nonzero_cuda(torch::Tensor input) {
    auto count_tensor = torch::zeros({1}, input.options().dtype(torch::kInt32));
    int* count_ptr = count_tensor.data_ptr<int>();

    int num_elements = input.numel();
    int block_size = 256;
    int grid_size = (num_elements + block_size - 1) / block_size;

    count_nonzero_kernel<<<grid_size, block_size>>>(input.data_ptr<float>(), count_ptr, num_elements);
    cudaDeviceSynchronize();

    int count = count_tensor.item().toInt();
    if (count == 0) {
        return torch::empty({0, input.dim()}, input.options().dtype(torch::kLong));
    }

    auto indices = torch::empty({count, input.dim()}, input.options().dtype(torch::kLong));
    count_tensor.zero_();

    auto sizes = input.sizes();
    auto strides = input.strides();
    auto sizes_tensor = torch::tensor(sizes, input.options().dtype(torch::kLong));
    auto strides_tensor = torch::tensor(strides, input.options().dtype(torch::kLong));

    fill_indices_kernel<<<grid_size, block_size>>>(
        input.data_ptr<float>(),
        indices.data_ptr<int64_t>(),
        sizes_tensor.data_ptr<int64_t>(),
        strides_tensor.data_ptr<int64_t>(),
        input.dim(),
        num_elements,
        count_ptr
    );

    return indices;
}

torch::Tensor logical_or_cuda(torch::Tensor first, torch::Tensor last) {
    auto out = torch::empty_like(first, first.options().dtype(torch::kBool));
    int ndim = first.size(0);
    logical_or_kernel<<<1, ndim>>>(
        first.data_ptr<int64_t>(),
        last.data_ptr<int64_t>(),
        out.data_ptr<bool>(),
        ndim
    );
    return out;
}

torch::Tensor mean_cuda(torch::Tensor input, int dim) {
    auto sizes = input.sizes();
    int64_t reduction_size = sizes[dim];
    int64_t reduction_stride = input.stride(dim);
    std::vector<int64_t> output_sizes;
    for (int i = 0; i < input.dim(); ++i) {
        if (i != dim) output_sizes.push_back(sizes[i]);
    }
    auto output = torch::empty(output_sizes, input.options());
    int64_t output_numel = output.numel();

    int block_size = 256;
    int grid_size = (output_numel + block_size - 1) / block_size;
    mean_kernel<<<grid_size, block_size>>>(
        input.data_ptr<float>(),
        output.data_ptr<float>(),
        reduction_size,
        reduction_stride,
        output_numel
    );

    return output;
}
"""

cpp_src = """
torch::Tensor nonzero_cuda(torch::Tensor input);
torch::Tensor logical_or_cuda(torch::Tensor first, torch::Tensor last);
torch::Tensor mean_cuda(torch::Tensor input, int dim);
"""

custom_ops = load_inline(
    name='custom_ops',
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=['nonzero_cuda', 'logical_or_cuda', 'mean_cuda'],
    verbose=True,
)

class ModelNew(nn.Module):
    def __init__(self, reduction_ratio):
        super().__init__()
        self.reduction_ratio = reduction_ratio

    def forward(self, x):
        non_zero_indices = custom_ops.nonzero_cuda(x)
        if non_zero_indices.size(0) == 0:
            logical_or = torch.empty(0, dtype=torch.bool, device=x.device)
        else:
            first = non_zero_indices[0]
            last = non_zero_indices[-1]
            logical_or = custom_ops.logical_or_cuda(first, last)
        reduced_tensor = custom_ops.mean_cuda(x, self.reduction_ratio)
        return logical_or, reduced_tensor
