# expect: no-global-kernel
# kernel_infilling_dev.json id 6936: correct, but it calls cuDNN and writes no kernel of its own.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# CUDA code for cudnn-based convolution
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
using unique_cudnn_convolution_descriptor_t = std::unique_ptr<cudnnConvolutionStruct, cudnn_convolution_descriptor_deleter_t>;

inline unique_cudnn_convolution_descriptor_t make_unique_convolution_descriptor(const std::vector<int> &stride,
                                                                                const std::vector<int> &padding,
                                                                                const std::vector<int> &dilation) {
    cudnnConvolutionDescriptor_t desc;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&desc));
    CHECK_CUDNN(cudnnSetConvolutionNdDescriptor(desc, padding.size(), padding.data(), stride.data(), dilation.data(),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    return unique_cudnn_convolution_descriptor_t(desc);
}

torch::Tensor conv_cuda(torch::Tensor input, torch::Tensor weight, std::optional<torch::Tensor> bias,
                        const std::vector<int> &stride, const std::vector<int> &padding,
                        const std::vector<int> &dilation) {
    if (input.ndimension() == 3) {
        torch::Tensor output = conv_cuda(input.unsqueeze(-2), weight.unsqueeze(-2), bias, {1, stride.at(0)},
                                         {0, padding.at(0)}, {1, dilation.at(0)});
        return output.squeeze(-2);
    }

    TORCH_CHECK(input.ndimension() >= 4);
    cudnnHandle_t handle = at::native::getCudnnHandle();

    auto conv_desc = make_unique_convolution_descriptor(stride, padding, dilation);
    auto input_desc = make_unique_tensor_descriptor(input);
    auto weight_desc = make_unique_filter_descriptor(weight);

    std::vector<int> output_dims(input.ndimension());
    CHECK_CUDNN(cudnnGetConvolutionNdForwardOutputDim(conv_desc.get(), input_desc.get(), weight_desc.get(),
                                                     output_dims.size(), output_dims.data()));
    torch::Tensor output = torch::empty(std::vector<long>(output_dims.begin(), output_dims.end()), input.options());
    auto output_desc = make_unique_tensor_descriptor(output);

    const float alpha = 1.f;
    const float beta = 0.f;
    size_t workspace_size;

    const int algo_count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    cudnnConvolutionFwdAlgoPerf_t perfs[algo_count];
    int returned_algo_count;
    CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, input_desc.get(), weight_desc.get(), conv_desc.get(),
                                                       output_desc.get(), algo_count, &returned_algo_count, perfs));
    TORCH_CHECK_GT(returned_algo_count, 0);
    cudnnConvolutionFwdAlgo_t algo = perfs[0].algo;

    CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(handle, input_desc.get(), weight_desc.get(), conv_desc.get(),
                                                        output_desc.get(), algo, &workspace_size));
    auto workspace = c10::cuda::CUDACachingAllocator::get()->allocate(workspace_size);

    if (bias) {
        TORCH_CHECK(bias->ndimension() == 1 && bias->numel() == weight.size(0));
        std::vector<long> bias_dims(output.ndimension(), 1);
        bias_dims.at(1) = bias->numel();
        auto bias_desc = make_unique_tensor_descriptor(bias->view(bias_dims));

        cudnnActivationDescriptor_t act_desc;
        CHECK_CUDNN(cudnnCreateActivationDescriptor(&act_desc));
        CHECK_CUDNN(cudnnSetActivationDescriptor(act_desc, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0));

        CHECK_CUDNN(cudnnConvolutionBiasActivationForward(
            handle, &alpha, input_desc.get(), input.data_ptr<float>(), weight_desc.get(), weight.data_ptr<float>(),
            conv_desc.get(), algo, workspace.get(), workspace_size, &beta, output_desc.get(),
            output.data_ptr<float>(), bias_desc.get(), bias->data_ptr<float>(), act_desc, output_desc.get(),
            output.data_ptr<float>()));
        CHECK_CUDNN(cudnnDestroyActivationDescriptor(act_desc));
    } else {
        CHECK_CUDNN(cudnnConvolutionForward(handle, &alpha, input_desc.get(), input.data_ptr<float>(),
                                            weight_desc.get(), weight.data_ptr<float>(), conv_desc.get(), algo,
                                            workspace.get(), workspace_size, &beta, output_desc.get(),
                                            output.data_ptr<float>()));
    }

    return output;
}
"""

cpp_src = """
torch::Tensor conv_cuda(torch::Tensor input, torch::Tensor weight, std::optional<torch::Tensor> bias,
                        const std::vector<int> &stride, const std::vector<int> &padding,
                        const std::vector<int> &dilation);
"""

# Load the CUDA extension
conv_cuda = load_inline(
    name='conv_cuda',
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=['conv_cuda'],
    verbose=True,
)


class ModelNew(nn.Module):
    def __init__(self, conv_params, conv3d_params):
        super().__init__()
        self.module_dict = nn.ModuleDict({"conv": nn.Conv2d(**conv_params), "conv3d": nn.Conv3d(**conv3d_params)})

    def forward(self, x):
        conv3d_module = self.module_dict["conv3d"]
        return conv_cuda.conv_cuda(
            x,
            conv3d_module.weight,
            conv3d_module.bias,
            list(conv3d_module.stride),
            list(conv3d_module.padding),
            list(conv3d_module.dilation),
        )
