#include "rollout/sampler.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "rollout/remasking.h"
#include "rollout/sampler_checks.h"
#include "rollout/token_draw.h"

namespace dice {
namespace {

// A generator of the model's device type, private to this sampler: a clone of the device's
// default generator (the only way to make a CUDA one without CUDA headers), then reseeded.
at::Generator make_generator(c10::Device device, uint64_t seed) {
  at::Generator base = at::globalContext().defaultGenerator(device);
  at::Generator gen;
  {
    std::lock_guard<std::mutex> lock(base.mutex());
    gen = base.clone();
  }
  gen.set_current_seed(seed);
  return gen;
}

c10::TensorOptions model_options(Qwen3LMImpl& model) {
  return at::TensorOptions().dtype(model.lm_head.scalar_type()).device(model.lm_head.device());
}

}  // namespace

Result<std::unique_ptr<BlockDiffusionSampler>> BlockDiffusionSampler::create(
    Qwen3LM model, const SamplerOptions& options) {
  if (!model) return Status::invalid_argument("BlockDiffusionSampler: no model");
  DICE_RETURN_IF_ERROR(check_sampler_options(options, model->config()));
  try {
    return std::unique_ptr<BlockDiffusionSampler>(new BlockDiffusionSampler(model, options));
  } catch (const c10::Error& e) {
    return Status::internal(std::string("BlockDiffusionSampler: cannot allocate the KV cache (") +
                            std::to_string(options.max_batch) + " x " +
                            std::to_string(options.max_sequence_length) +
                            " tokens): " + e.what_without_backtrace());
  }
}

BlockDiffusionSampler::BlockDiffusionSampler(Qwen3LM model, const SamplerOptions& options)
    : model_(std::move(model)),
      options_(options),
      block_(options.sampling.block_size),
      long_options_(at::TensorOptions().dtype(at::kLong).device(model_->lm_head.device())),
      cache_(model_->config(), options.max_batch, options.max_sequence_length,
             model_options(*model_)),
      generator_(make_generator(model_->lm_head.device(), options.seed)),
      slots_(static_cast<size_t>(options.max_batch)) {
  const int64_t slots = options.max_batch;
  blocks_ = at::zeros({slots, block_}, long_options_);
  prev_blocks_ = at::zeros({slots, block_}, long_options_);
  start_masks_ = at::zeros({slots}, long_options_);
  block_step_ = at::zeros({slots}, long_options_);
  unmask_step_ = at::full({slots, block_}, -1, long_options_);
  log_probs_ = at::zeros({slots, block_}, long_options_.dtype(at::kFloat));
  running_ = at::zeros({slots}, long_options_.dtype(at::kBool));
  padding_ = at::full({slots, block_}, options.mask_token_id, long_options_);
  if (options.cuda_graphs && ChunkForwardGraphs::supported(long_options_.device())) {
    graphs_ = std::make_unique<ChunkForwardGraphs>(model_, cache_);
  }
}

Status BlockDiffusionSampler::set_sampling(const SamplingOptions& sampling) {
  if (!idle()) {
    return Status::invalid_argument("BlockDiffusionSampler::set_sampling: sequences in flight");
  }
  SamplerOptions next = options_;
  next.sampling = sampling;
  DICE_RETURN_IF_ERROR(check_sampler_options(next, model_->config()));
  if (sampling.block_size != block_) {
    return Status::invalid_argument("sampling.block_size " + std::to_string(sampling.block_size) +
                                    " differs from this sampler's " + std::to_string(block_));
  }
  options_ = std::move(next);
  return Status::ok_status();
}

Status BlockDiffusionSampler::add_request(GenerationRequest request) {
  DICE_RETURN_IF_ERROR(check_request(request, options_, model_->config()));
  waiting_.push_back(std::move(request));
  return Status::ok_status();
}

std::vector<GenerationResult> BlockDiffusionSampler::take_finished() {
  std::vector<GenerationResult> out;
  out.swap(finished_);
  return out;
}

Result<std::vector<GenerationResult>> BlockDiffusionSampler::generate(
    std::vector<GenerationRequest> requests) {
  if (!idle()) return Status::invalid_argument("BlockDiffusionSampler::generate: sampler is busy");
  std::map<uint64_t, size_t> index;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!index.emplace(requests[i].id, i).second) {
      return Status::invalid_argument("BlockDiffusionSampler::generate: request id " +
                                      std::to_string(requests[i].id) + " appears twice");
    }
  }
  for (GenerationRequest& r : requests) {
    const uint64_t id = r.id;
    Status s = add_request(std::move(r));
    if (!s.ok()) {
      waiting_.clear();
      return s.with_context("request " + std::to_string(id));
    }
  }
  std::vector<GenerationResult> out(requests.size());
  while (!idle()) DICE_RETURN_IF_ERROR(step());
  for (GenerationResult& r : take_finished()) out[index.at(r.id)] = std::move(r);
  return out;
}

Status BlockDiffusionSampler::step() {
  try {
    torch::NoGradGuard no_grad;
    admit();
    if (running_count_ == 0) return Status::ok_status();
    const SamplingOptions& s = options_.sampling;
    at::Tensor logits = forward_blocks();
    TokenDraw draw = draw_tokens(logits, s, options_.mask_token_id,
                                 s.remasking == Remasking::ENTROPY_BOUNDED, generator_);
    at::Tensor masked = blocks_.eq(options_.mask_token_id) & running_.unsqueeze(1);
    at::Tensor quota = step_quota(start_masks_, block_step_, s.denoising_steps);
    at::Tensor commit = select_commits(s.remasking, masked, draw.confidence, draw.entropy, quota,
                                       s.threshold, &generator_);
    blocks_ = at::where(commit, draw.tokens, blocks_);
    unmask_step_ = at::where(commit, block_step_.unsqueeze(1), unmask_step_);
    log_probs_ = at::where(commit, draw.log_probs, log_probs_);
    block_step_ = block_step_ + running_.to(at::kLong);
    harvest(running_ & blocks_.ne(options_.mask_token_id).all(1));
    return Status::ok_status();
  } catch (const c10::Error& e) {
    return Status::internal(std::string("BlockDiffusionSampler::step: ") +
                            e.what_without_backtrace());
  }
}

at::Tensor BlockDiffusionSampler::row_mask(const std::vector<bool>& rows) const {
  std::vector<uint8_t> bytes(rows.begin(), rows.end());
  // Pageable host memory: a non-blocking copy is staged at once and does not wait for the GPU.
  return at::tensor(bytes, at::kByte)
      .to(at::kBool)
      .to(long_options_.device(), /*non_blocking=*/true);
}

void BlockDiffusionSampler::admit() {
  std::vector<int64_t> rows;
  std::vector<std::vector<int64_t>> prompts;
  for (size_t b = 0; b < slots_.size() && !waiting_.empty(); ++b) {
    Slot& slot = slots_[b];
    if (slot.running) continue;
    GenerationRequest request = std::move(waiting_.front());
    waiting_.pop_front();
    slot = Slot();
    slot.running = true;
    slot.max_new_tokens =
        request.max_new_tokens > 0 ? request.max_new_tokens : options_.sampling.max_new_tokens;
    slot.stop_token_ids =
        request.stop_token_ids ? *request.stop_token_ids : options_.sampling.stop_token_ids;
    slot.result.id = request.id;
    rows.push_back(static_cast<int64_t>(b));
    prompts.push_back(std::move(request.prompt));
    ++running_count_;
  }
  if (rows.empty()) return;
  layout_valid_ = false;
  prefill(rows, prompts);

  // First decode blocks: the prompt's tail (P mod B tokens), then masks.
  const int64_t joined = static_cast<int64_t>(rows.size());
  std::vector<int64_t> first(static_cast<size_t>(joined * block_), options_.mask_token_id);
  std::vector<int64_t> masks(rows.size());
  for (size_t j = 0; j < rows.size(); ++j) {
    const int64_t len = static_cast<int64_t>(prompts[j].size());
    const int64_t tail = len % block_;
    std::copy(prompts[j].end() - tail, prompts[j].end(), first.begin() + j * block_);
    masks[j] = block_ - tail;
  }
  const auto cpu_long = at::TensorOptions().dtype(at::kLong);
  const c10::Device device = long_options_.device();
  at::Tensor index = at::tensor(rows, cpu_long).to(device, /*non_blocking=*/true);
  blocks_.index_copy_(0, index,
                      at::tensor(first, cpu_long).view({joined, block_}).to(device, true));
  start_masks_.index_copy_(0, index, at::tensor(masks, cpu_long).to(device, true));
  block_step_.index_fill_(0, index, 0);
  unmask_step_.index_fill_(0, index, -1);
  log_probs_.index_fill_(0, index, 0.0);
  running_.index_fill_(0, index, true);
}

void BlockDiffusionSampler::prefill(const std::vector<int64_t>& rows,
                                    const std::vector<std::vector<int64_t>>& prompts) {
  // Whole prompt blocks go through a forward over the joining requests only, into a small cache
  // whose rows are then copied into the slots' rows: a forward over all slots would spend the
  // whole batch's compute on a few prompts.
  auto whole = [&](size_t j) { return static_cast<int64_t>(prompts[j].size()) / block_ * block_; };
  const auto cpu_long = at::TensorOptions().dtype(at::kLong);
  const c10::Device device = long_options_.device();
  size_t begin = 0;
  while (begin < rows.size()) {
    size_t end = begin;
    int64_t width = 0;
    while (end < rows.size()) {
      const int64_t w = std::max(width, whole(end));
      const int64_t group = static_cast<int64_t>(end - begin + 1);
      if (end > begin && group * w > options_.max_prefill_tokens) break;
      width = w;
      ++end;
    }
    const int64_t group = static_cast<int64_t>(end - begin);
    if (width > 0) {
      std::vector<int64_t> ids(static_cast<size_t>(group * width), options_.mask_token_id);
      std::vector<int64_t> valid(static_cast<size_t>(group));
      for (size_t j = begin; j < end; ++j) {
        valid[j - begin] = whole(j);
        std::copy(prompts[j].begin(), prompts[j].begin() + whole(j),
                  ids.begin() + static_cast<int64_t>(j - begin) * width);
      }
      KvCache joining(model_->config(), group, width, model_options(*model_));
      model_->prefill(at::tensor(ids, cpu_long).view({group, width}).to(device, true), valid,
                      joining);
      std::vector<int64_t> group_rows(rows.begin() + begin, rows.begin() + end);
      at::Tensor index = at::tensor(group_rows, cpu_long).to(device, true);
      for (int64_t l = 0; l < cache_.num_layers(); ++l) {
        cache_.keys(l).narrow(1, 0, width).index_copy_(0, index, joining.keys(l));
        cache_.values(l).narrow(1, 0, width).index_copy_(0, index, joining.values(l));
      }
      stats_.prefill_tokens += group * width;
    }
    for (size_t j = begin; j < end; ++j) cache_.set_length(rows[j], whole(j));
    begin = end;
  }
}

void BlockDiffusionSampler::build_layout() {
  // A slot whose block finished last step brings [finished block, next block] (2B tokens, the
  // first B stored), a slot in mid-block its block (B), an idle slot nothing.
  const int64_t slots = static_cast<int64_t>(slots_.size());
  std::vector<int64_t> valid(slots_.size(), 0);
  bool any_commit = false;
  int64_t tokens = 0;
  for (size_t b = 0; b < slots_.size(); ++b) {
    if (!slots_[b].running) continue;
    valid[b] = slots_[b].commit_pending ? 2 * block_ : block_;
    any_commit = any_commit || slots_[b].commit_pending;
    tokens += valid[b];
  }
  const int64_t chunk = any_commit ? 2 * block_ : block_;
  // Packed when padding is left (idle slots, or slots that do not commit in a commit step): the
  // dense layers then run on the real tokens only.
  // Graphs replay padded shapes only: one launch for every slot's chunk costs less than the
  // padding on a GPU where launches, not arithmetic, bound the step.
  const bool packed = !graphs_ && options_.pack_chunks && tokens < slots * chunk;
  layout_ = model_->chunk_layout(cache_, valid, chunk, packed, long_options_.device(),
                                 graphs_ ? options_.graph_key_slots : 1);
  layout_commit_ = any_commit;

  // Per slot, the places of its current block's B tokens among the forward's tokens: the logits
  // drawn from. Idle slots read token 0 (their draws are never committed). Then the commit flags.
  std::vector<int64_t> host(static_cast<size_t>(slots * block_ + slots), 0);
  int64_t start = 0;  // the slot's first token among the forward's
  const bool identity = !any_commit && !packed;
  for (int64_t b = 0; b < slots; ++b) {
    const Slot& slot = slots_[static_cast<size_t>(b)];
    const int64_t first = packed ? start : b * chunk;
    const int64_t offset = slot.commit_pending ? block_ : 0;
    for (int64_t i = 0; i < block_; ++i) {
      host[static_cast<size_t>(b * block_ + i)] = slot.running ? first + offset + i : 0;
    }
    host[static_cast<size_t>(slots * block_ + b)] = slot.running && slot.commit_pending;
    start += valid[static_cast<size_t>(b)];
  }
  if (identity) {
    logit_index_ = at::Tensor();
    commit_rows_ = at::Tensor();
  } else {
    at::Tensor dev = at::tensor(host, at::TensorOptions().dtype(at::kLong))
                         .to(long_options_.device(), /*non_blocking=*/true);
    logit_index_ = dev.narrow(0, 0, slots * block_);
    commit_rows_ = dev.narrow(0, slots * block_, slots).to(at::kBool).unsqueeze(1);  // [S, 1]
  }
  layout_valid_ = true;
}

at::Tensor BlockDiffusionSampler::forward_blocks() {
  if (!layout_valid_) build_layout();
  ++stats_.steps;
  stats_.row_forwards += running_count_;
  stats_.processed_tokens += layout_.tokens;
  // The chunk grid [S, T]: [finished block, next block] for committing slots, [current block,
  // padding] for the others in a commit step; the current blocks otherwise.
  at::Tensor chunk = blocks_;
  if (layout_commit_) {
    chunk = at::cat({at::where(commit_rows_, prev_blocks_, blocks_),
                     at::where(commit_rows_, blocks_, padding_)},
                    1);
  }
  if (layout_.grid_index.defined()) chunk = chunk.reshape({-1}).index_select(0, layout_.grid_index);
  at::Tensor hidden;
  if (graphs_) {
    hidden = graphs_->run(chunk, layout_);
    stats_.graphed_steps = graphs_->replays();
    stats_.graphs = graphs_->graphs();
    stats_.graph_capture_seconds = graphs_->capture_seconds();
  } else {
    hidden = model_->hidden_chunk(chunk, layout_, cache_);
  }
  hidden = hidden.reshape({-1, hidden.size(-1)});
  // lm_head on the current blocks' tokens only (not on the finished blocks or padding).
  if (logit_index_.defined()) hidden = hidden.index_select(0, logit_index_);
  at::Tensor logits =
      model_->logits(hidden).view({static_cast<int64_t>(slots_.size()), block_, -1});
  if (layout_commit_) {
    // The forward wrote every token's keys/values past the lengths; keep the finished blocks.
    for (size_t b = 0; b < slots_.size(); ++b) {
      if (slots_[b].running && slots_[b].commit_pending) {
        const int64_t row = static_cast<int64_t>(b);
        cache_.set_length(row, cache_.lengths()[b] + block_);
      }
    }
    layout_valid_ = false;  // new lengths, and no commit next step unless a block finishes
  }
  return logits;
}

void BlockDiffusionSampler::harvest(const at::Tensor& done) {
  // The step's one host sync, one copy: which blocks finished, their tokens, trace steps and
  // log-probs (in double, exact for all four).
  at::Tensor state = at::cat({done.to(at::kDouble).unsqueeze(1), blocks_.to(at::kDouble),
                              unmask_step_.to(at::kDouble), log_probs_.to(at::kDouble)},
                             1)
                         .to(at::kCPU)
                         .contiguous();
  const int64_t width = 1 + 3 * block_;
  const double* s = state.data_ptr<double>();
  std::vector<int64_t> tokens(static_cast<size_t>(block_)), steps(static_cast<size_t>(block_));
  std::vector<float> log_probs(static_cast<size_t>(block_));

  std::vector<bool> freed(slots_.size(), false);
  bool any_next = false, any_freed = false;
  for (size_t b = 0; b < slots_.size(); ++b) {
    Slot& slot = slots_[b];
    slot.commit_pending = false;
    const double* row = s + static_cast<int64_t>(b) * width;
    if (!slot.running || row[0] == 0) continue;
    for (int64_t i = 0; i < block_; ++i) {
      tokens[static_cast<size_t>(i)] = static_cast<int64_t>(row[1 + i]);
      steps[static_cast<size_t>(i)] = static_cast<int64_t>(row[1 + block_ + i]);
      log_probs[static_cast<size_t>(i)] = static_cast<float>(row[1 + 2 * block_ + i]);
    }
    if (append_block(static_cast<int64_t>(b), tokens.data(), steps.data(), log_probs.data())) {
      stats_.generated_tokens += static_cast<int64_t>(slot.result.tokens.size());
      ++stats_.finished;
      finished_.push_back(std::move(slot.result));
      slot.running = false;
      --running_count_;
      cache_.set_length(static_cast<int64_t>(b), 0);
      freed[b] = any_freed = true;
    } else {
      slot.commit_pending = true;
      any_next = true;
    }
  }
  if (any_next) {
    // Every slot whose block finished starts the next one; `done` is on the device already (for
    // the freed slots this is harmless: admit() resets a slot before it runs again).
    at::Tensor next = done.unsqueeze(1);
    prev_blocks_ = at::where(next, blocks_, prev_blocks_);
    blocks_ = blocks_.masked_fill(next, options_.mask_token_id);
    start_masks_ = start_masks_.masked_fill(done, block_);
    block_step_ = block_step_.masked_fill(done, 0);
    unmask_step_ = unmask_step_.masked_fill(next, -1);
  }
  if (any_freed) running_ = running_ & row_mask(freed).logical_not();
  if (any_next || any_freed) layout_valid_ = false;
}

std::vector<uint64_t> BlockDiffusionSampler::cancel_all() {
  std::vector<uint64_t> ids;
  for (const GenerationRequest& r : waiting_) ids.push_back(r.id);
  waiting_.clear();
  for (size_t b = 0; b < slots_.size(); ++b) {
    Slot& slot = slots_[b];
    if (!slot.running) continue;
    ids.push_back(slot.result.id);
    slot = Slot();
    cache_.set_length(static_cast<int64_t>(b), 0);
  }
  running_count_ = 0;
  running_.fill_(false);
  layout_valid_ = false;
  return ids;
}

bool BlockDiffusionSampler::append_block(int64_t row, const int64_t* tokens, const int64_t* steps,
                                         const float* log_probs) {
  Slot& slot = slots_[static_cast<size_t>(row)];
  GenerationResult& r = slot.result;
  stats_.committed_tokens += std::count_if(steps, steps + block_, [](int64_t k) { return k >= 0; });
  auto keep_tail = [&](int64_t end) {
    for (int64_t j = end; j < block_; ++j) {
      r.tail_tokens.push_back(tokens[j]);
      r.tail_unmask_steps.push_back(static_cast<int32_t>(steps[j]));
    }
  };
  for (int64_t i = 0; i < block_; ++i) {
    if (steps[i] < 0) continue;  // the prompt's tail in a first block
    r.tokens.push_back(tokens[i]);
    r.unmask_steps.push_back(static_cast<int32_t>(steps[i]));
    r.log_probs.push_back(log_probs[i]);
    const auto& stops = slot.stop_token_ids;
    if (std::find(stops.begin(), stops.end(), static_cast<uint32_t>(tokens[i])) != stops.end()) {
      r.finish_reason = FinishReason::STOP_TOKEN;
      keep_tail(i + 1);
      return true;
    }
    if (static_cast<int64_t>(r.tokens.size()) >= slot.max_new_tokens) {
      r.finish_reason = FinishReason::MAX_TOKENS;
      keep_tail(i + 1);
      return true;
    }
  }
  return false;
}

}  // namespace dice
