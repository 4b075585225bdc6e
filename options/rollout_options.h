// Options of a rollout worker: which model, how to sample from it (block diffusion), how much to
// batch, and the prompt templates. Sampling defaults are DICE's released RL settings and match the
// defaults of schemas/rollout.capnp SamplingParams. Each field is documented once, in visit_fields.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"
#include "schemas/rollout.capnp.h"

namespace dice {

// The YAML names of the wire's Remasking (schemas/rollout.capnp): which masked positions a
// denoising step commits. One type for the concept: the options use the schema's enum.
inline constexpr config::EnumName<schema::Remasking> kRemaskingNames[] = {
    {schema::Remasking::LOW_CONFIDENCE_STATIC, "low_confidence_static"},
    {schema::Remasking::LOW_CONFIDENCE_DYNAMIC, "low_confidence_dynamic"},
    {schema::Remasking::SEQUENTIAL, "sequential"},
    {schema::Remasking::ENTROPY_BOUNDED, "entropy_bounded"},
    {schema::Remasking::RANDOM, "random"}};

}  // namespace dice

// The config machinery finds a field's enum names by argument-dependent lookup, and Cap'n Proto
// defines its enums in capnp::schemas (dice::schema::Remasking is an alias), so the lookup hook
// lives there.
namespace capnp::schemas {
constexpr const auto& enum_names(::dice::schema::Remasking) {
  return ::dice::kRemaskingNames;
}
}  // namespace capnp::schemas

namespace dice {

using Remasking = schema::Remasking;

// How new weights reach rollout workers (learner_service.cc, rollout/nccl_weight_receiver.h).
enum class WeightSync { kCheckpoint, kNccl, kAuto };
inline constexpr config::EnumName<WeightSync> kWeightSyncNames[] = {
    {WeightSync::kCheckpoint, "checkpoint"},
    {WeightSync::kNccl, "nccl"},
    {WeightSync::kAuto, "auto"}};
constexpr const auto& enum_names(WeightSync) {
  return kWeightSyncNames;
}

struct SamplingOptions {
  double temperature = 1.0;
  double top_p = 1.0;
  int top_k = 0;
  int max_new_tokens = 4096;
  int block_size = 4;
  int denoising_steps = 4;
  Remasking remasking = Remasking::LOW_CONFIDENCE_DYNAMIC;
  double threshold = 0.9;
  std::vector<std::uint32_t> stop_token_ids;

  template <class V>
  void visit_fields(V& v) {
    v.field("temperature", temperature, "Softmax temperature; 0 = greedy. Default: 1",
            config::at_least(0));
    v.field("top_p", top_p, "Nucleus sampling mass; 1 disables it. Default: 1",
            config::greater_than(0), config::at_most(1));
    v.field("top_k", top_k, "Sample among the k most likely tokens; 0 disables it. Default: 0",
            config::at_least(0));
    v.field("max_new_tokens", max_new_tokens, "Longest response in tokens. Default: 4096",
            config::at_least(1));
    v.field("block_size", block_size,
            "Tokens per diffusion block (the model was trained with 4). Default: 4",
            config::at_least(1));
    v.field("denoising_steps", denoising_steps,
            "Denoising steps per block, at most block_size. Default: 4", config::at_least(1));
    v.field("remasking", remasking,
            "Which masked tokens each step commits (rollout/remasking.h): low_confidence_static "
            "(the most confident), low_confidence_dynamic (all above threshold, else the most "
            "confident), sequential (left to right), entropy_bounded (lowest entropy within the "
            "bound), random (a uniform choice). sequential, random and entropy_bounded are "
            "faithful: they choose without looking at the drawn tokens, so every committed token "
            "follows the softmax the learner trains and its recorded log-prob is the sampling "
            "policy's. The low_confidence ones keep a draw only when it is likely, which tilts "
            "the committed tokens towards the argmax (less exploration) and makes the recorded "
            "log-prob not the sampling policy's. Default: low_confidence_dynamic");
    v.field("threshold", threshold,
            "Confidence a token needs to be committed early (low_confidence_dynamic), or the "
            "entropy bound (entropy_bounded). Default: 0.9",
            config::greater_than(0), config::at_most(1));
    v.field("stop_token_ids", stop_token_ids,
            "Generation ends after the block holding one of these token ids; empty = the model's "
            "<|im_end|> and <|endoftext|> (Qwen3's 151645 and 151643), looked up in its "
            "tokenizer. Default: []");
  }

  void validate(config::Checker& c) const {
    if (denoising_steps > block_size) {
      c.error("denoising_steps", "must be at most block_size (" + std::to_string(block_size) +
                                     "): each step commits at least one token, got " +
                                     std::to_string(denoising_steps));
    }
  }
};

// Where a rollout worker samples.
enum class RolloutDevice { kCuda, kCpu };
inline constexpr config::EnumName<RolloutDevice> kRolloutDeviceNames[] = {
    {RolloutDevice::kCuda, "cuda"}, {RolloutDevice::kCpu, "cpu"}};
constexpr const auto& enum_names(RolloutDevice) {
  return kRolloutDeviceNames;
}

struct RolloutOptions {
  std::string model_path;
  std::uint32_t mask_token_id = 151669;
  RolloutDevice device = RolloutDevice::kCuda;
  SamplingOptions sampling;
  int max_batch = 128;
  std::int64_t max_sequence_length = 6144;
  double gpu_memory_fraction = 0.9;
  std::map<std::string, std::string> prompt_templates;
  bool abort_on_weight_update = false;
  WeightSync weight_sync = WeightSync::kAuto;
  int weight_sync_timeout_ms = 60000;
  bool cuda_graphs = true;

  template <class V>
  void visit_fields(V& v) {
    v.field("model_path", model_path,
            "Folder of the initial policy in Hugging Face layout (config.json, tokenizer.json, "
            "*.safetensors). Required.",
            config::required(), config::is_path(), config::non_empty());
    v.field("mask_token_id", mask_token_id,
            "Token id of <|MASK|>; the model's config.json mask_token_id wins where they differ "
            "(a pruned vocabulary has its own). Default: 151669");
    v.field("device", device,
            "cuda: sample on the worker's GPU in bf16 (refused without one); cpu: in fp32 on "
            "the CPU, for the tiny models of tests and toy runs only (tools/up without a GPU). "
            "Default: cuda");
    v.field("sampling", sampling, "Sampling for RL rollouts (requests may override per task).");
    v.field("max_batch", max_batch,
            "Most sequences decoded at once by one worker; on a GPU it decodes as many as fit "
            "(gpu_memory_fraction), up to this. Default: 128",
            config::at_least(1));
    v.field("max_sequence_length", max_sequence_length,
            "KV-cache room per sequence in tokens (prompt + response + one block); GPU memory is "
            "max_batch x this x the model's KV bytes per token. Default: 6144",
            config::at_least(8));
    v.field("gpu_memory_fraction", gpu_memory_fraction,
            "Share of its GPU's total memory a rollout worker may hold (weights, KV cache, "
            "working memory): at start it sizes its KV cache to the sequences of "
            "max_sequence_length that fit in this share and in the memory free then, at most "
            "max_batch, and says so. Lower it where a learner shares the GPU. Default: 0.9",
            config::greater_than(0), config::at_most(1));
    v.field("prompt_templates", prompt_templates,
            "Prompt template file per task kind (infill, end_to_end); a missing kind uses the "
            "built-in template. Default: {}",
            config::is_path());
    v.field("abort_on_weight_update", abort_on_weight_update,
            "On new weights, drop sequences begun on older ones (true) or finish them (false). "
            "Default: false");
    v.field("weight_sync", weight_sync,
            "How the learner pushes new weights: checkpoint (a checkpoint folder every worker "
            "reads), nccl (NCCL broadcast from the learner's GPU; the learner refuses to start "
            "without a GPU and NCCL), auto (nccl when the learner has both, else checkpoint). "
            "Workers that cannot join a broadcast, and any broadcast that fails or times out, "
            "fall back to the checkpoint folder. Use checkpoint where the learner and a rollout "
            "worker share one GPU (NCCL cannot put two ranks on one device). Default: auto");
    v.field("weight_sync_timeout_ms", weight_sync_timeout_ms,
            "Longest wait, on the learner and on each worker, for all ranks to join the NCCL "
            "communicator and for one broadcast to finish; past it the broadcast is aborted and "
            "the checkpoint folder used. Default: 60000",
            config::at_least(1000));
    v.field("cuda_graphs", cuda_graphs,
            "Replay the denoising forwards from CUDA graphs on a GPU (one launch per forward "
            "instead of thousands; the forward then pads every sequence to the longest chunk). "
            "Default: true");
  }

  void validate(config::Checker& c) const {
    for (const auto& entry : prompt_templates) {
      if (entry.first != "infill" && entry.first != "end_to_end") {
        c.error("prompt_templates." + entry.first,
                "unknown task kind; expected infill or end_to_end");
      }
    }
  }
};

}  // namespace dice
