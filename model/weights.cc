#include "model/weights.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <set>
#include <sstream>

#include "common/log.h"

namespace dice {
namespace {

// Where each per-layer checkpoint tensor lives in a decoder layer: the one name table.
struct LayerParam {
  const char* suffix;  // after "model.layers.N."
  at::Tensor& (*get)(Qwen3DecoderLayerImpl& layer);
};
const LayerParam kLayerParams[] = {
    {"input_layernorm.weight", [](auto& l) -> at::Tensor& { return l.input_layernorm->weight; }},
    {"self_attn.q_proj.weight", [](auto& l) -> at::Tensor& { return l.self_attn->q_proj; }},
    {"self_attn.k_proj.weight", [](auto& l) -> at::Tensor& { return l.self_attn->k_proj; }},
    {"self_attn.v_proj.weight", [](auto& l) -> at::Tensor& { return l.self_attn->v_proj; }},
    {"self_attn.o_proj.weight", [](auto& l) -> at::Tensor& { return l.self_attn->o_proj; }},
    {"self_attn.q_norm.weight", [](auto& l) -> at::Tensor& { return l.self_attn->q_norm->weight; }},
    {"self_attn.k_norm.weight", [](auto& l) -> at::Tensor& { return l.self_attn->k_norm->weight; }},
    {"post_attention_layernorm.weight",
     [](auto& l) -> at::Tensor& { return l.post_attention_layernorm->weight; }},
    {"mlp.gate_proj.weight", [](auto& l) -> at::Tensor& { return l.mlp->gate_proj; }},
    {"mlp.up_proj.weight", [](auto& l) -> at::Tensor& { return l.mlp->up_proj; }},
    {"mlp.down_proj.weight", [](auto& l) -> at::Tensor& { return l.mlp->down_proj; }},
};
constexpr char kLmHead[] = "lm_head.weight";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

bool to_scalar_type(DType dtype, at::ScalarType* out) {
  switch (dtype) {
    case DType::kBF16:
      *out = at::kBFloat16;
      return true;
    case DType::kF16:
      *out = at::kHalf;
      return true;
    case DType::kF32:
      *out = at::kFloat;
      return true;
    default:
      return false;
  }
}

Result<DType> to_dtype(at::ScalarType type) {
  switch (type) {
    case at::kBFloat16:
      return DType::kBF16;
    case at::kHalf:
      return DType::kF16;
    case at::kFloat:
      return DType::kF32;
    default:
      return Status::invalid_argument(std::string("cannot save parameters of dtype ") +
                                      c10::toString(type));
  }
}

const char* config_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "bfloat16";
    case DType::kF16:
      return "float16";
    default:
      return "float32";
  }
}

}  // namespace

std::vector<NamedParameter> hf_named_parameters(Qwen3LMImpl& lm) {
  std::vector<NamedParameter> out;
  out.push_back({"model.embed_tokens.weight", lm.model->embed_tokens});
  for (size_t i = 0; i < lm.model->layers.size(); ++i) {
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    for (const LayerParam& p : kLayerParams) {
      out.push_back({prefix + p.suffix, p.get(*lm.model->layers[i])});
    }
  }
  out.push_back({"model.norm.weight", lm.model->norm->weight});
  if (!lm.config().tie_word_embeddings) out.push_back({kLmHead, lm.lm_head});
  return out;
}

Status check_weights(const Checkpoint& checkpoint, Qwen3LMImpl& lm) {
  std::set<std::string> expected;
  for (const NamedParameter& p : hf_named_parameters(lm)) {
    expected.insert(p.name);
    const TensorInfo* t = checkpoint.find(p.name);
    if (t == nullptr) {
      return Status::invalid_argument(checkpoint.dir() + ": tensor '" + p.name +
                                      "' is missing (required by config.json)");
    }
    const std::string where = checkpoint.file_of(p.name) + ": tensor '" + p.name + "'";
    std::vector<int64_t> want(p.tensor.sizes().begin(), p.tensor.sizes().end());
    if (t->shape != want) {
      return Status::invalid_argument(where + ": shape " + shape_text(t->shape) +
                                      " but config.json implies " + shape_text(want));
    }
    at::ScalarType type;
    if (!to_scalar_type(t->dtype, &type)) {
      return Status::invalid_argument(where + ": dtype " + dtype_name(t->dtype) +
                                      " is not BF16, F16 or F32");
    }
    // SafetensorsFile checked the span against dtype and shape on open; this guards a
    // TensorInfo made any other way, since from_blob would read past its data.
    if (t->nbytes != t->numel() * dtype_size(t->dtype)) {
      return Status::corruption(where + ": " + std::to_string(t->nbytes) + " bytes of data for " +
                                std::to_string(t->numel()) + " elements");
    }
  }
  for (const auto& entry : checkpoint.tensors()) {
    const std::string& name = entry.first;
    if (expected.count(name) != 0) continue;
    if (name == kLmHead && lm.config().tie_word_embeddings) continue;  // load_weights warns
    return Status::invalid_argument(checkpoint.file_of(name) + ": unexpected tensor '" + name +
                                    "' (not part of the model config.json describes)");
  }
  return Status::ok_status();
}

Status load_weights(const Checkpoint& checkpoint, Qwen3LMImpl& lm, bool* copying) {
  torch::NoGradGuard no_grad;
  if (copying != nullptr) *copying = false;
  // Everything is checked before the first parameter is written: a refused checkpoint leaves
  // the model as it was (a rollout worker keeps sampling with it).
  DICE_RETURN_IF_ERROR(check_weights(checkpoint, lm));
  if (checkpoint.find(kLmHead) != nullptr && lm.config().tie_word_embeddings) {
    DICE_LOG(Warn) << "ignoring lm_head.weight of a tied model" << kv("dir", checkpoint.dir());
  }
  std::vector<NamedParameter> params = hf_named_parameters(lm);
  if (copying != nullptr) *copying = true;
  std::size_t copied = 0;
  try {
    for (NamedParameter& p : params) {
      const TensorInfo* t = checkpoint.find(p.name);
      at::ScalarType type = at::kFloat;
      to_scalar_type(t->dtype, &type);  // checked above
      // The map is read-only; from_blob never writes through the pointer, copy_ only reads it.
      at::Tensor source =
          at::from_blob(const_cast<uint8_t*>(t->data), t->shape, at::TensorOptions().dtype(type));
      p.tensor.copy_(source);
      ++copied;
    }
  } catch (const std::exception& e) {
    // Past the checks only the copy itself can fail (device memory for a dtype conversion, a
    // device error): the model now mixes two checkpoints, which the caller must undo.
    return Status::internal(checkpoint.dir() + ": copying tensor " + std::to_string(copied + 1) +
                            " of " + std::to_string(params.size()) + " ('" + params[copied].name +
                            "') failed, the model is partly overwritten: " + e.what());
  }
  return Status::ok_status();
}

Result<Qwen3LM> load_qwen3_lm(const std::string& dir, const c10::TensorOptions& options) {
  DICE_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(dir));
  Qwen3LM lm(checkpoint.config(), options);
  DICE_RETURN_IF_ERROR(load_weights(checkpoint, *lm));
  return lm;
}

Status save_qwen3_lm(Qwen3LMImpl& lm, const std::string& dir,
                     const CheckpointWriterOptions& options) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> host;  // keeps CPU copies alive until written
  std::vector<TensorView> views;
  ModelConfig config = lm.config();
  for (NamedParameter& p : hf_named_parameters(lm)) {
    at::Tensor t = p.tensor.detach().to(at::kCPU).contiguous();
    DICE_ASSIGN_OR_RETURN(DType dtype, to_dtype(t.scalar_type()));
    config.dtype = config_dtype_name(dtype);
    views.push_back({p.name, dtype, std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
                     t.data_ptr(), static_cast<size_t>(t.nbytes())});
    host.push_back(std::move(t));
  }
  return write_model_dir(dir, config, views, options);
}

}  // namespace dice
