// What travels in an NCCL weight broadcast and how both ends agree on it:
//
//   learner:  specs = broadcast_specs(model, wire dtype)  -> WeightsUpdate.nccl.tensors
//             tensors = wire_tensors(model, wire dtype)   -> broadcast from rank 0
//   worker:   validate_specs(tensors from the message, its model)   (before joining: a mismatch
//             is an error reply, never a hang or a half-written model)
//             staging = staging_tensors(its model)        -> broadcast into them, then copy in
//
// The order is hf_named_parameters() order (the checkpoint order), the same on every rank by
// construction; names are the Hugging Face parameter names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "model/nccl/nccl_communicator.h"
#include "model/qwen3.h"
#include "schemas/control.capnp.h"

namespace dice::weights {

// One tensor of the broadcast, as schema::WeightsUpdate::TensorSpec says it.
struct TensorSpec {
  std::string name;                  // Hugging Face parameter name
  std::string dtype;                 // "bf16", "f16" or "f32"
  std::vector<std::uint64_t> shape;  // sizes, outermost first
  bool operator==(const TensorSpec& o) const {
    return name == o.name && dtype == o.dtype && shape == o.shape;
  }
};

// "bf16" / "f16" / "f32" for those dtypes; InvalidArgument for any other (NCCL weight sync
// carries floating-point parameters only).
Result<std::string> dtype_name(c10::ScalarType dtype);
Result<c10::ScalarType> dtype_from_name(const std::string& name);

// The broadcast order of `lm`'s parameters, each as it travels in `wire_dtype`.
Result<std::vector<TensorSpec>> broadcast_specs(Qwen3LMImpl& lm, c10::ScalarType wire_dtype);

// OK when `specs` are exactly `lm`'s parameters in order, dtypes and shapes; otherwise
// InvalidArgument naming the first difference (index, name, what differs).
Status validate_specs(const std::vector<TensorSpec>& specs, Qwen3LMImpl& lm);

// The learner's tensors to send: each parameter in `wire_dtype`, contiguous (the parameter
// itself when it already is, else a converted copy).
std::vector<at::Tensor> wire_tensors(Qwen3LMImpl& lm, c10::ScalarType wire_dtype);

// Fresh, uninitialised tensors shaped, typed and placed like `lm`'s parameters, in order: where a
// worker receives while its sampler keeps running on the old weights.
std::vector<at::Tensor> staging_tensors(Qwen3LMImpl& lm);

// Copies `staged` (from staging_tensors()) into `lm`'s parameters. InvalidArgument when the
// count or a shape differs.
Status copy_into_model(const std::vector<at::Tensor>& staged, Qwen3LMImpl& lm);

// The device buffers behind `tensors` for nccl::Communicator::broadcast, and their CUDA device.
// InvalidArgument naming the tensor when one is not on CUDA, not contiguous, not bf16/f16/f32,
// or on another device than the first.
struct DeviceBuffers {
  std::vector<nccl::DeviceBuffer> buffers;
  int device = 0;
};
Result<DeviceBuffers> device_buffers(const std::vector<at::Tensor>& tensors);

// Between TensorSpec lists and the schema's List(TensorSpec).
void write_specs(const std::vector<TensorSpec>& specs,
                 capnp::List<schema::WeightsUpdate::TensorSpec>::Builder out);
std::vector<TensorSpec> read_specs(capnp::List<schema::WeightsUpdate::TensorSpec>::Reader in);

}  // namespace dice::weights
