// Between Qwen3LM parameters and Hugging Face checkpoints (checkpoint.h): the name table,
// validated loading, and saving a model directory transformers can load.
//
// Names (N = layer index):
//   model.embed_tokens.weight                      [vocab, hidden]
//   model.layers.N.input_layernorm.weight          [hidden]
//   model.layers.N.self_attn.{q,k,v,o}_proj.weight [out, in]
//   model.layers.N.self_attn.{q,k}_norm.weight     [head_dim]
//   model.layers.N.post_attention_layernorm.weight [hidden]
//   model.layers.N.mlp.{gate,up,down}_proj.weight  [out, in]
//   model.norm.weight                              [hidden]
//   lm_head.weight                                 [vocab, hidden]  (absent when tied)
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/checkpoint_writer.h"
#include "model/qwen3.h"

namespace dice {

struct NamedParameter {
  std::string name;   // Hugging Face checkpoint name
  at::Tensor tensor;  // the model's parameter (shares storage with it)
};

// Every parameter of `lm` under its checkpoint name, in checkpoint order.
std::vector<NamedParameter> hf_named_parameters(Qwen3LMImpl& lm);

// Whether `checkpoint` fits `lm` exactly, without writing anything: every parameter's tensor is
// there with its shape and a BF16/F16/F32 dtype, and no tensor is left over (a tied model
// ignores a stray lm_head.weight). Errors name the tensor and its file. The file's own integrity
// (header, offsets, sizes) was checked when the Checkpoint was opened.
Status check_weights(const Checkpoint& checkpoint, Qwen3LMImpl& lm);

// check_weights(), then copies every checkpoint tensor into `lm`, converting dtype and device as
// needed. All or nothing as far as the checks go: an error from them leaves `lm` untouched. An
// error while copying (Internal, e.g. device memory for a conversion) leaves `lm` partly
// overwritten; `copying`, when given, says which of the two an error is (true once the first
// parameter may have been written).
Status load_weights(const Checkpoint& checkpoint, Qwen3LMImpl& lm, bool* copying = nullptr);

// Opens `dir`, builds a Qwen3LM from its config with `options` (dtype, device) and loads it.
Result<Qwen3LM> load_qwen3_lm(const std::string& dir, const c10::TensorOptions& options = {});

// Writes `lm` to `dir` as config.json + safetensors in the parameters' dtype (one parameter at a
// time is copied to the CPU when the model is elsewhere).
Status save_qwen3_lm(Qwen3LMImpl& lm, const std::string& dir,
                     const CheckpointWriterOptions& options = {});

}  // namespace dice
