#include "model/layer_checkpoint.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <utility>

namespace dice {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The forward's attention context, kept by the layer's autograd node for the recomputation: RoPE
// tables, masks and tile plans are constants of the forward (none needs a gradient), and a
// capsule keeps them, plans included, for as long as the node lives.
struct SavedContext : torch::CustomClassHolder {
  explicit SavedContext(AttentionContext c) : ctx(std::move(c)) {}
  AttentionContext ctx;
};

// The layer travels as its address: it is owned by the model, which outlives the backward pass
// of any forward it ran (the trainer runs backward before it lets the model go).
struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  static at::Tensor forward(AutogradContext* saved, const at::Tensor& x, int64_t layer,
                            const c10::intrusive_ptr<SavedContext>& context) {
    saved->save_for_backward({x});
    saved->saved_data["layer"] = layer;
    saved->saved_data["context"] = c10::IValue::make_capsule(context);
    return reinterpret_cast<Qwen3DecoderLayerImpl*>(layer)->forward(x, context->ctx);  // no grad
  }

  static variable_list backward(AutogradContext* saved, variable_list grad_outputs) {
    auto* layer = reinterpret_cast<Qwen3DecoderLayerImpl*>(saved->saved_data["layer"].toInt());
    auto context =
        c10::static_intrusive_pointer_cast<SavedContext>(saved->saved_data["context"].toCapsule());
    at::Tensor x = saved->get_saved_variables()[0].detach().requires_grad_(true);
    at::Tensor y;
    {
      at::AutoGradMode grad(true);
      y = layer->forward(x, context->ctx);
    }
    // Accumulates the layer's parameter gradients and x's.
    torch::autograd::backward({y}, {grad_outputs[0]});
    return {x.grad(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor checkpointed_layer(Qwen3DecoderLayerImpl& layer, const at::Tensor& x,
                              const AttentionContext& ctx) {
  TORCH_CHECK(ctx.cache == nullptr, "checkpointed_layer: training layouts only (no KV cache)");
  return CheckpointedLayer::apply(x, reinterpret_cast<int64_t>(&layer),
                                  c10::make_intrusive<SavedContext>(ctx));
}

}  // namespace dice
