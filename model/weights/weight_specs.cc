#include "model/weights/weight_specs.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <sstream>

#include "model/weights.h"

namespace dice::weights {
namespace {

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

std::vector<std::uint64_t> shape_of(const at::Tensor& t) {
  std::vector<std::uint64_t> shape;
  for (std::int64_t size : t.sizes()) shape.push_back(static_cast<std::uint64_t>(size));
  return shape;
}

}  // namespace

Result<std::string> dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kBFloat16:
      return std::string("bf16");
    case at::kHalf:
      return std::string("f16");
    case at::kFloat:
      return std::string("f32");
    default:
      return Status::invalid_argument(std::string("dtype ") + c10::toString(dtype) +
                                      " cannot be broadcast (bf16, f16 or f32 only)");
  }
}

Result<c10::ScalarType> dtype_from_name(const std::string& name) {
  if (name == "bf16") return at::kBFloat16;
  if (name == "f16") return at::kHalf;
  if (name == "f32") return at::kFloat;
  return Status::invalid_argument("unknown dtype '" + name + "' (bf16, f16 or f32)");
}

Result<std::vector<TensorSpec>> broadcast_specs(Qwen3LMImpl& lm, c10::ScalarType wire_dtype) {
  DICE_ASSIGN_OR_RETURN(std::string dtype, dtype_name(wire_dtype));
  std::vector<TensorSpec> specs;
  for (const NamedParameter& p : hf_named_parameters(lm)) {
    specs.push_back(TensorSpec{p.name, dtype, shape_of(p.tensor)});
  }
  return specs;
}

Status validate_specs(const std::vector<TensorSpec>& specs, Qwen3LMImpl& lm) {
  const std::vector<NamedParameter> params = hf_named_parameters(lm);
  const std::size_t n = std::min(specs.size(), params.size());
  for (std::size_t i = 0; i < n; ++i) {
    const TensorSpec& want = specs[i];
    const NamedParameter& have = params[i];
    const std::string where = "broadcast tensor " + std::to_string(i) + " '" + want.name + "'";
    if (want.name != have.name) {
      return Status::invalid_argument(where + ": this worker's model has '" + have.name +
                                      "' at that position");
    }
    Result<std::string> dtype = dtype_name(have.tensor.scalar_type());
    if (!dtype.ok() || *dtype != want.dtype) {
      return Status::invalid_argument(
          where + ": dtype " + want.dtype + ", this worker holds " +
          (dtype.ok() ? *dtype : c10::toString(have.tensor.scalar_type())));
    }
    if (shape_of(have.tensor) != want.shape) {
      return Status::invalid_argument(where + ": shape " + shape_text(want.shape) +
                                      ", this worker holds " + shape_text(shape_of(have.tensor)));
    }
  }
  if (specs.size() != params.size()) {
    return Status::invalid_argument("broadcast has " + std::to_string(specs.size()) +
                                    " tensors, this worker's model " +
                                    std::to_string(params.size()) + " (first unmatched: '" +
                                    (specs.size() > n ? specs[n].name : params[n].name) + "')");
  }
  return Status::ok_status();
}

std::vector<at::Tensor> wire_tensors(Qwen3LMImpl& lm, c10::ScalarType wire_dtype) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> out;
  for (const NamedParameter& p : hf_named_parameters(lm)) {
    out.push_back(p.tensor.detach().to(wire_dtype).contiguous());
  }
  return out;
}

std::vector<at::Tensor> staging_tensors(Qwen3LMImpl& lm) {
  std::vector<at::Tensor> out;
  for (const NamedParameter& p : hf_named_parameters(lm)) {
    out.push_back(at::empty(p.tensor.sizes(), p.tensor.options().requires_grad(false)));
  }
  return out;
}

Status copy_into_model(const std::vector<at::Tensor>& staged, Qwen3LMImpl& lm) {
  torch::NoGradGuard no_grad;
  std::vector<NamedParameter> params = hf_named_parameters(lm);
  if (staged.size() != params.size()) {
    return Status::invalid_argument("staged weights: " + std::to_string(staged.size()) +
                                    " tensors for " + std::to_string(params.size()) +
                                    " parameters");
  }
  for (std::size_t i = 0; i < staged.size(); ++i) {
    if (!staged[i].sizes().equals(params[i].tensor.sizes())) {
      return Status::invalid_argument("staged weights: '" + params[i].name + "' has another shape");
    }
  }
  for (std::size_t i = 0; i < staged.size(); ++i) params[i].tensor.copy_(staged[i]);
  return Status::ok_status();
}

Result<DeviceBuffers> device_buffers(const std::vector<at::Tensor>& tensors) {
  DeviceBuffers out;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    const std::string where = "broadcast tensor " + std::to_string(i);
    if (!t.device().is_cuda()) {
      return Status::invalid_argument(where + " is on " + t.device().str() +
                                      "; NCCL needs CUDA tensors");
    }
    if (!t.is_contiguous()) return Status::invalid_argument(where + " is not contiguous");
    if (i == 0) out.device = t.device().index();
    if (t.device().index() != out.device) {
      return Status::invalid_argument(where + " is on " + t.device().str() +
                                      ", tensor 0 on cuda:" + std::to_string(out.device));
    }
    nccl::DataType dtype;
    switch (t.scalar_type()) {
      case at::kBFloat16:
        dtype = nccl::DataType::kBf16;
        break;
      case at::kHalf:
        dtype = nccl::DataType::kF16;
        break;
      case at::kFloat:
        dtype = nccl::DataType::kF32;
        break;
      default:
        return Status::invalid_argument(where + " has dtype " + c10::toString(t.scalar_type()) +
                                        " (bf16, f16 or f32 only)");
    }
    out.buffers.push_back(
        nccl::DeviceBuffer{t.data_ptr(), static_cast<std::size_t>(t.numel()), dtype});
  }
  return out;
}

void write_specs(const std::vector<TensorSpec>& specs,
                 capnp::List<schema::WeightsUpdate::TensorSpec>::Builder out) {
  for (unsigned i = 0; i < out.size() && i < specs.size(); ++i) {
    out[i].setName(specs[i].name);
    out[i].setDtype(specs[i].dtype);
    auto shape = out[i].initShape(static_cast<unsigned>(specs[i].shape.size()));
    for (unsigned j = 0; j < shape.size(); ++j) shape.set(j, specs[i].shape[j]);
  }
}

std::vector<TensorSpec> read_specs(capnp::List<schema::WeightsUpdate::TensorSpec>::Reader in) {
  std::vector<TensorSpec> specs;
  for (auto spec : in) {
    TensorSpec s{spec.getName().cStr(), spec.getDtype().cStr(), {}};
    for (std::uint64_t size : spec.getShape()) s.shape.push_back(size);
    specs.push_back(std::move(s));
  }
  return specs;
}

}  // namespace dice::weights
