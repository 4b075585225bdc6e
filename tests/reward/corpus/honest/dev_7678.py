# expect: pass
# kernel_infilling_dev.json id 7678 (cuda_code), a published correct candidate.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# CUDA kernel and C++ code definitions
source = """
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/extension.h>

#define CHECK_CUDNN(status) AT_CUDNN_CHECK(status, " at " __FILE__ ":", __LINE__)

struct cudnn_tensor_descriptor_deleter_t {
    void operator()(cudnnTensorDescriptor_t desc) { CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc)); }
};
using unique_cudnn_tensor_descriptor_t = std::unique_ptr<cudnnTensorStruct, cudnn_tensor_descriptor_deleter_t>;

unique_cudnn_tensor_descriptor_t make_unique_tensor_descriptor(torch::Tensor tensor) {
    std::vector<int> dims(tensor.sizes().begin(), tensor.sizes().end());
    std::vector<int> strides(tensor.strides().begin(), tensor.strides().end());
    cudnnTensorDescriptor_t desc;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&desc));
    CHECK_CUDNN(cudnnSetTensorNdDescriptor(desc, CUDNN_DATA_FLOAT, tensor.ndimension(), dims.data(), strides.data()));
    return unique_cudnn_tensor_descriptor_t(desc);
}

struct cudnn_filter_descriptor_deleter_t {
    void operator()(cudnnFilterDescriptor_t desc) { CHECK_CUDNN(cudnnDestroyFilterDescriptor(desc)); }
};
using unique_cudnn_filter_descriptor_t = std::unique_ptr<cudnnFilterStruct, cudnn_filter_descriptor_deleter_t>;

unique_cudnn_filter_descriptor_t make_unique_filter_descriptor(torch::Tensor weight) {
    std::vector<int> dims(weight.sizes().begin(), weight.sizes().end());
    cudnnFilterDescriptor_t desc;
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&desc));
    CHECK_CUDNN(cudnnSetFilterNdDescriptor(desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, dims.size(), dims.data()));
    return unique_cudnn_filter_descriptor_t(desc);
}

struct cudnn_convolution_descriptor_deleter_t {
    void operator()(cudnnConvolutionDescriptor_t desc) { CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(desc)); }
};
using unique_cudnn_convolution_descriptor_t = std::unique_ptr<cudnnConvolutionStruct, cudnn_convolution_descriptor_deleter_t>;

unique_cudnn_convolution_descriptor_t make_unique_convolution_descriptor(const std::vector<int> &stride,
                                                                         const std::vector<int> &padding,
                                                                         const std::vector<int> &dilation) {
    cudnnConvolutionDescriptor_t desc;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&desc));
    CHECK_CUDNN(cudnnSetConvolutionNdDescriptor(desc, stride.size(), padding.data(), stride.data(), dilation.data(),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    return unique_cudnn_convolution_descriptor_t(desc);
}

torch::Tensor conv_transpose_cuda(torch::Tensor input, torch::Tensor weight, std::optional<torch::Tensor> bias,
                                  const std::vector<int> &stride, const std::vector<int> &padding,
                                  const std::vector<int> &output_padding, const std::vector<int> &dilation) {
    if (input.ndimension() == 3) {
        // Handle 1D by unsqueezing to 2D
        input = input.unsqueeze(-1);
        weight = weight.unsqueeze(-1);
        std::vector<int> new_stride{stride[0], 1};
        std::vector<int> new_padding{padding[0], 0};
        std::vector<int> new_output_padding{output_padding[0], 0};
        std::vector<int> new_dilation{dilation[0], 1};
        auto output = conv_transpose_cuda(input, weight, bias, new_stride, new_padding, new_output_padding, new_dilation);
        return output.squeeze(-1);
    }

    std::vector<long> output_dims{input.size(0), weight.size(1)};
    for (size_t i = 0; i < stride.size(); ++i) {
        long output_dim = (input.size(i + 2) - 1) * stride[i] + dilation[i] * (weight.size(i + 2) - 1) + 1 -
                          2 * padding[i] + output_padding[i];
        output_dims.emplace_back(output_dim);
    }
    torch::Tensor output = torch::empty(output_dims, input.options());

    cudnnHandle_t handle = at::native::getCudnnHandle();
    auto conv_desc = make_unique_convolution_descriptor(stride, padding, dilation);

    auto input_desc = make_unique_tensor_descriptor(input);
    auto weight_desc = make_unique_filter_descriptor(weight);
    auto output_desc = make_unique_tensor_descriptor(output);

    int algo_count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    cudnnConvolutionBwdDataAlgoPerf_t perfs[algo_count];
    int returned_algo_count;
    CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, weight_desc.get(), input_desc.get(),
                                                            conv_desc.get(), output_desc.get(), algo_count,
                                                            &returned_algo_count, perfs));
    TORCH_CHECK_GT(returned_algo_count, 0);
    cudnnConvolutionBwdDataAlgo_t algo = perfs[0].algo;

    size_t workspace_size;
    CHECK_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, weight_desc.get(), input_desc.get(),
                                                             conv_desc.get(), output_desc.get(), algo, &workspace_size));
    auto workspace = c10::cuda::CUDACachingAllocator::get()->allocate(workspace_size);

    const float alpha = 1.0f;
    const float beta = 0.0f;
    CHECK_CUDNN(cudnnConvolutionBackwardData(
        handle, &alpha, weight_desc.get(), weight.data_ptr<float>(), input_desc.get(), input.data_ptr<float>(),
        conv_desc.get(), algo, workspace.get(), workspace_size, &beta, output_desc.get(), output.data_ptr<float>()));

    if (bias) {
        // Add bias using a kernel
        auto bias_tensor = bias.value();
        TORCH_CHECK(bias_tensor.ndimension() == 1 && bias_tensor.numel() == weight.size(1));
        std::vector<long> bias_dims(output.ndimension(), 1);
        bias_dims[1] = bias_tensor.numel();
        auto bias_desc = make_unique_tensor_descriptor(bias_tensor.view(bias_dims));

        cudnnAddTensor(handle, &alpha, bias_desc.get(), bias_tensor.data_ptr<float>(),
                       &alpha, output_desc.get(), output.data_ptr<float>());
    }

    return output;
}

__global__ void add_bias_kernel(float *x, const float *bias, int out_channels, int L, int total_elements) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < total_elements) {
        int c = (idx / L) % out_channels;
        x[idx] += bias[c];
    }
}

torch::Tensor add_bias_cuda(torch::Tensor x, torch::Tensor bias) {
    auto output = x.clone();
    int out_channels = bias.size(0);
    int L = x.size(2);
    int total_elements = x.numel();
    const int block_size = 256;
    int num_blocks = (total_elements + block_size - 1) / block_size;
    add_bias_kernel<<<num_blocks, block_size>>>(output.data_ptr<float>(), bias.data_ptr<float>(), out_channels, L, total_elements);
    return output;
}

__global__ void xor_kernel(const float *x, const int64_t *y, float *output, int total_elements) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < total_elements) {
        int32_t x_int = static_cast<int32_t>(x[idx]);
        int32_t y_int = static_cast<int32_t>(y[idx]);
        output[idx] = static_cast<float>(x_int ^ y_int);
    }
}

torch::Tensor xor_cuda(torch::Tensor x, torch::Tensor y) {
    auto output = torch::empty_like(x);
    int total_elements = x.numel();
    const int block_size = 256;
    int num_blocks = (total_elements + block_size - 1) / block_size;
    xor_kernel<<<num_blocks, block_size>>>(x.data_ptr<float>(), y.data_ptr<int64_t>(), output.data_ptr<float>(), total_elements);
    return output;
}
"""

cpp_src = """
torch::Tensor conv_transpose_cuda(torch::Tensor input, torch::Tensor weight, std::optional<torch::Tensor> bias,
                                  const std::vector<int> &stride, const std::vector<int> &padding,
                                  const std::vector<int> &output_padding, const std::vector<int> &dilation);
torch::Tensor add_bias_cuda(torch::Tensor x, torch::Tensor bias);
torch::Tensor xor_cuda(torch::Tensor x, torch::Tensor y);
"""

# Load the CUDA extension
custom_ops = load_inline(
    name='custom_ops',
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=['conv_transpose_cuda', 'add_bias_cuda', 'xor_cuda'],
    verbose=True,
)

class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose1d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, output_padding=output_padding
        )
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x, y):
        # Perform ConvTranspose1d using custom CUDA function
        x = custom_ops.conv_transpose_cuda(
            x,
            self.conv_transpose.weight,
            self.conv_transpose.bias,
            list(self.conv_transpose.stride),
            list(self.conv_transpose.padding),
            list(self.conv_transpose.output_padding),
            list(self.conv_transpose.dilation)
        )
        # Add the custom bias
        x = custom_ops.add_bias_cuda(x, self.bias)
        # Perform element-wise XOR
        x = custom_ops.xor_cuda(x, y)
        return x
