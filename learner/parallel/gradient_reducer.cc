#include "learner/parallel/gradient_reducer.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <limits>
#include <mutex>
#include <string>

namespace dice {

struct GradientReducer::State {
  std::vector<at::Tensor> params;
  GradientCollective* collective = nullptr;
  std::vector<GradientBucket> buckets;
  std::vector<at::Tensor> flats;
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> bucket_of;  // per parameter; kNone for an empty one
  std::vector<std::size_t> slot_of;    // its place in its bucket
  // The hooks live on the parameters' gradient accumulators, which autograd holds only weakly:
  // held here, so that every forward's graph reaches the same accumulator (and its hook).
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::vector<std::uintptr_t> hook_keys;

  std::mutex mu;  // the hooks run on autograd's threads
  bool armed = false;
  std::vector<char> param_ready;
  std::vector<std::size_t> pending;  // per bucket: parameters without their last gradient yet
  std::size_t next_to_start = 0;
  std::size_t started_in_backward = 0;
  Status error;

  void start_ready_buckets() {  // under mu
    while (error.ok() && next_to_start < buckets.size() && pending[next_to_start] == 0) {
      error = collective->start_sum(next_to_start, flats[next_to_start]);
      ++next_to_start;
      ++started_in_backward;
    }
  }

  void on_gradient(std::size_t param) {
    std::lock_guard<std::mutex> lock(mu);
    if (!armed || bucket_of[param] == kNone) return;
    const std::size_t b = bucket_of[param];
    if (param_ready[param]) {
      if (b < next_to_start && error.ok()) {
        error = Status::internal("data-parallel: parameter " + std::to_string(param) +
                                 " got a second gradient in one backward after its bucket " +
                                 std::to_string(b) + " was summed (a weight used twice)");
      }
      return;
    }
    param_ready[param] = 1;
    --pending[b];
    start_ready_buckets();
  }
};

Result<std::unique_ptr<GradientReducer>> GradientReducer::create(std::vector<at::Tensor> params,
                                                                 GradientCollective* collective,
                                                                 const BucketPlanOptions& options) {
  if (collective == nullptr) return Status::invalid_argument("GradientReducer: no collective");
  std::vector<BucketParam> sizes;
  std::vector<std::pair<at::ScalarType, c10::Device>> groups;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    if (!p.requires_grad() || !p.is_contiguous()) {
      return Status::invalid_argument("GradientReducer: parameter " + std::to_string(i) +
                                      " does not require gradients or is not contiguous");
    }
    const std::pair<at::ScalarType, c10::Device> key{p.scalar_type(), p.device()};
    std::size_t group = 0;
    while (group < groups.size() && groups[group] != key) ++group;
    if (group == groups.size()) groups.push_back(key);
    sizes.push_back(
        {p.numel(), static_cast<std::int64_t>(p.element_size()), static_cast<int>(group)});
  }
  auto state = std::make_shared<State>();
  state->params = std::move(params);
  state->collective = collective;
  state->buckets = plan_gradient_buckets(sizes, options);
  state->bucket_of.assign(state->params.size(), State::kNone);
  state->slot_of.assign(state->params.size(), 0);
  try {
    for (std::size_t b = 0; b < state->buckets.size(); ++b) {
      const GradientBucket& bucket = state->buckets[b];
      const auto& [dtype, device] = groups[static_cast<std::size_t>(bucket.group)];
      state->flats.push_back(at::zeros({bucket.numel}, at::TensorOptions(device).dtype(dtype)));
      for (std::size_t s = 0; s < bucket.params.size(); ++s) {
        state->bucket_of[bucket.params[s]] = b;
        state->slot_of[bucket.params[s]] = s;
      }
    }
    std::weak_ptr<State> weak = state;
    for (std::size_t i = 0; i < state->params.size(); ++i) {
      auto accumulator = torch::autograd::impl::grad_accumulator(state->params[i]);
      if (!accumulator) {
        return Status::invalid_argument("GradientReducer: parameter " + std::to_string(i) +
                                        " has no gradient accumulator (not a leaf)");
      }
      state->hook_keys.push_back(
          accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
              [weak, i](const torch::autograd::variable_list& outputs,
                        const torch::autograd::variable_list&) {
                if (auto s = weak.lock()) s->on_gradient(i);
                return outputs;
              })));
      state->accumulators.push_back(std::move(accumulator));
    }
  } catch (const c10::Error& e) {
    return Status::internal(std::string("GradientReducer: ") + e.what_without_backtrace());
  }
  std::unique_ptr<GradientReducer> reducer(new GradientReducer(state));
  reducer->zero();
  return reducer;
}

GradientReducer::GradientReducer(std::shared_ptr<State> state) : state_(std::move(state)) {}

GradientReducer::~GradientReducer() {
  for (std::size_t i = 0; i < state_->accumulators.size(); ++i) {
    state_->accumulators[i]->del_post_hook(state_->hook_keys[i]);
  }
}

void GradientReducer::zero() {
  std::lock_guard<std::mutex> lock(state_->mu);
  at::NoGradGuard no_grad;
  for (at::Tensor& flat : state_->flats) flat.zero_();
  for (std::size_t i = 0; i < state_->params.size(); ++i) {
    const std::size_t b = state_->bucket_of[i];
    if (b == State::kNone) continue;
    const at::Tensor& p = state_->params[i];
    const at::Tensor& flat = state_->flats[b];
    // An alias of the flat buffer's storage, not an autograd view: optimizers detach_() and
    // zero_() gradients in place, which autograd refuses on views.
    at::Tensor grad = at::empty({0}, flat.options());
    grad.set_(flat.storage(),
              flat.storage_offset() + state_->buckets[b].offsets[state_->slot_of[i]], p.sizes(),
              p.strides());
    p.mutable_grad() = grad;
  }
  state_->armed = false;
  state_->param_ready.assign(state_->params.size(), 0);
  state_->pending.clear();
  for (const GradientBucket& bucket : state_->buckets)
    state_->pending.push_back(bucket.params.size());
  state_->next_to_start = 0;
}

void GradientReducer::arm() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->armed = true;
  // Counted from here, not from zero(): the optimizer's step ends with zero_grad (zero()), and
  // the trainer reads the overlap of the step after it.
  state_->started_in_backward = 0;
}

Status GradientReducer::finish() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->armed = false;
  DICE_RETURN_IF_ERROR(state_->error);
  for (; state_->next_to_start < state_->buckets.size(); ++state_->next_to_start) {
    state_->error =
        state_->collective->start_sum(state_->next_to_start, state_->flats[state_->next_to_start]);
    DICE_RETURN_IF_ERROR(state_->error);
  }
  state_->error = state_->collective->wait();
  return state_->error;
}

std::size_t GradientReducer::bucket_count() const {
  return state_->buckets.size();
}

std::size_t GradientReducer::started_in_backward() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->started_in_backward;
}

}  // namespace dice
