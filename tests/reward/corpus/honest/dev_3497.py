# expect: pass
# kernel_infilling_dev.json id 3497 (cuda_code), a published correct candidate.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Custom CUDA extension for threshold and convolution
source = """
#include <ATen/cuda/Exceptions.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/extension.h>

#define CHECK_CUDNN(status) AT_CUDNN_CHECK(status, " at " __FILE__ ":", __LINE__)

struct cudnn_tensor_descriptor_deleter_t {
    void operator()(cudnnTensorDescriptor_t desc) { CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc)); }
};
using unique_cudnn_tensor_descriptor_t = std::unique_ptr<cudnnTensorStruct, cudnn_tensor_descriptor_deleter_t>;

inline unique_cudnn_tensor_descriptor_t make_unique_tensor_descriptor(torch::Tensor tensor) {
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

inline unique_cudnn_filter_descriptor_t make_unique_filter_descriptor(torch::Tensor weight) {
    std::vector<int> dims(weight.sizes().begin(), weight.sizes().end());
    cudnnFilterDescriptor_t desc;
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&desc));
    CHECK_CUDNN(cudnnSetFilterNdDescriptor(desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, dims.size(), dims.data()));
    return unique_cudnn_filter_descriptor_t(desc);
}

struct cudnn_convolution_descriptor_deleter_t {
    void operator()(cudnnConvolutionDescriptor_t desc) { CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(desc)); }
};
using unique_cudnn_convolution_descriptor_t = 
    std::unique_ptr<cudnnConvolutionStruct, cudnn_convolution_descriptor_deleter_t>;

inline unique_cudnn_convolution_descriptor_t make_unique_convolution_descriptor(
    const std::vector<int>& stride, const std::vector<int>& padding, const std::vector<int>& dilation) {
    cudnnConvolutionDescriptor_t desc;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&desc));
    CHECK_CUDNN(cudnnSetConvolutionNdDescriptor(desc, stride.size(), padding.data(), stride.data(), dilation.data(),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    return unique_cudnn_convolution_descriptor_t(desc);
}

__global__ void threshold_float_kernel(const float* input, float* output, int num_elements) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < num_elements) {
        output[idx] = input[idx] > 0.0f ? 1.0f : 0.0f;
    }
}

torch::Tensor threshold_float_cuda(torch::Tensor input) {
    torch::Tensor output = torch::empty_like(input);
    int num_elements = input.numel();
    const int block_size = 256;
    int num_blocks = (num_elements + block_size - 1) / block_size;
    threshold_float_kernel<<<num_blocks, block_size>>>(input.data_ptr<float>(), output.data_ptr<float>(), num_elements);
    return output;
}

torch::Tensor conv_forward_cuda(torch::Tensor input, torch::Tensor weight, std::optional<torch::Tensor> bias,
                                const std::vector<int>& stride, const std::vector<int>& padding,
                                const std::vector<int>& dilation) {
    cudnnHandle_t handle = at::native::getCudnnHandle();
    auto conv_desc = make_unique_convolution_descriptor(stride, padding, dilation);
    auto input_desc = make_unique_tensor_descriptor(input);
    auto weight_desc = make_unique_filter_descriptor(weight);

    std::vector<int> output_dims(input.ndimension());
    CHECK_CUDNN(cudnnGetConvolutionNdForwardOutputDim(conv_desc.get(), input_desc.get(), weight_desc.get(),
                                                      output_dims.size(), output_dims.data()));
    torch::Tensor output = torch::empty(
        std::vector<int64_t>(output_dims.begin(), output_dims.end()), input.options());
    auto output_desc = make_unique_tensor_descriptor(output);

    const float* input_ptr = input.data_ptr<float>();
    const float* weight_ptr = weight.data_ptr<float>();
    float* output_ptr = output.data_ptr<float>();

    int algo_count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    cudnnConvolutionFwdAlgoPerf_t perfs[algo_count];
    int returned_algo_count;
    CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, input_desc.get(), weight_desc.get(), conv_desc.get(),
                                                       output_desc.get(), algo_count, &returned_algo_count, perfs));
    TORCH_CHECK_GT(returned_algo_count, 0);
    cudnnConvolutionFwdAlgo_t algo = perfs[0].algo;

    size_t workspace_size;
    CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(handle, input_desc.get(), weight_desc.get(), conv_desc.get(),
                                                        output_desc.get(), algo, &workspace_size));
    auto workspace = c10::cuda::CUDACachingAllocator::get()->allocate(workspace_size);

    const float alpha = 1.f;
    const float beta = 0.f;

    if (bias) {
        TORCH_CHECK(bias->ndimension() == 1 && bias->numel() == weight.size(0));
        std::vector<int64_t> bias_dims(input.ndimension(), 1);
        bias_dims[1] = bias->numel();
        auto bias_desc = make_unique_tensor_descriptor(bias->view(bias_dims));
        const float* bias_ptr = bias->data_ptr<float>();

        cudnnActivationDescriptor_t act_desc;
        CHECK_CUDNN(cudnnCreateActivationDescriptor(&act_desc));
        CHECK_CUDNN(cudnnSetActivationDescriptor(act_desc, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0));

        CHECK_CUDNN(cudnnConvolutionBiasActivationForward(
            handle, &alpha, input_desc.get(), input_ptr, weight_desc.get(), weight_ptr, conv_desc.get(), algo,
            workspace.get(), workspace_size, &beta, output_desc.get(), output_ptr, bias_desc.get(), bias_ptr, act_desc,
            output_desc.get(), output_ptr));

        CHECK_CUDNN(cudnnDestroyActivationDescriptor(act_desc));
    } else {
        CHECK_CUDNN(cudnnConvolutionForward(handle, &alpha, input_desc.get(), input_ptr, weight_desc.get(), weight_ptr,
                                           conv_desc.get(), algo, workspace.get(), workspace_size, &beta,
                                           output_desc.get(), output_ptr));
    }
    return output;
}
"""

cpp_src = """
torch::Tensor threshold_float_cuda(torch::Tensor input);
torch::Tensor conv_forward_cuda(torch::Tensor input, torch::Tensor weight, std::optional<torch::Tensor> bias,
                                const std::vector<int>& stride, const std::vector<int>& padding,
                                const std::vector<int>& dilation);
"""

# Load the CUDA extension
conv_extension = load_inline(
    name='conv_extension',
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=['threshold_float_cuda', 'conv_forward_cuda'],
    verbose=True,
)

class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, bias):
        super().__init__()
        self.conv2d = nn.Conv2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, bias=bias
        )

    def forward(self, x):
        x = conv_extension.threshold_float_cuda(x)
        return conv_extension.conv_forward_cuda(
            x, 
            self.conv2d.weight, 
            self.conv2d.bias, 
            list(self.conv2d.stride), 
            list(self.conv2d.padding), 
            list(self.conv2d.dilation)
        )
