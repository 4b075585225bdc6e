#include "model/layer_checkpoint.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <utility>

namespace dice {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The forward's attention context, kept by the layer's autograd node for the recomputation: RoPE
// tables, masks and tile plans are constants of the forward (none needs a gradient), and a
// capsule keeps them, plans included, for as long as the node lives. With sharded parameters
// it also carries the hooks that bring the layer's weights back for the recomputation.
struct SavedContext : torch::CustomClassHolder {
  SavedContext(AttentionContext c, LayerParameterHooks* h, int64_t index)
      : ctx(std::move(c)), hooks(h), layer_index(index) {}
  AttentionContext ctx;
  LayerParameterHooks* hooks;  // null: the weights stay in place
  int64_t layer_index;
};

// The layer travels as its address: it is owned by the model, which outlives the backward pass
// of any forward it ran (the trainer runs backward before it lets the model go).
struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  static at::Tensor forward(AutogradContext* saved, const at::Tensor& x, int64_t layer,
                            const c10::intrusive_ptr<SavedContext>& context) {
    saved->save_for_backward({x});
    saved->saved_data["layer"] = layer;
    saved->saved_data["context"] = c10::IValue::make_capsule(context);
    if (context->hooks) context->hooks->materialize(context->layer_index);
    // No grad here: autograd records nothing, so nothing keeps the weights past this call.
    at::Tensor y = reinterpret_cast<Qwen3DecoderLayerImpl*>(layer)->forward(x, context->ctx);
    if (context->hooks) context->hooks->release_after_forward(context->layer_index);
    return y;
  }

  static variable_list backward(AutogradContext* saved, variable_list grad_outputs) {
    auto* layer = reinterpret_cast<Qwen3DecoderLayerImpl*>(saved->saved_data["layer"].toInt());
    auto context =
        c10::static_intrusive_pointer_cast<SavedContext>(saved->saved_data["context"].toCapsule());
    if (context->hooks) context->hooks->materialize(context->layer_index);
    at::Tensor x = saved->get_saved_variables()[0].detach().requires_grad_(true);
    {
      at::Tensor y;
      {
        at::AutoGradMode grad(true);
        y = layer->forward(x, context->ctx);
      }
      // Accumulates the layer's parameter gradients and x's.
      torch::autograd::backward({y}, {grad_outputs[0]});
    }  // the recomputation's graph goes with y: nothing refers to the full weights any more
    if (context->hooks) context->hooks->after_backward(context->layer_index);
    return {x.grad(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor checkpointed_layer(Qwen3DecoderLayerImpl& layer, const at::Tensor& x,
                              const AttentionContext& ctx, LayerParameterHooks* hooks,
                              int64_t layer_index) {
  TORCH_CHECK(ctx.cache == nullptr, "checkpointed_layer: training layouts only (no KV cache)");
  return CheckpointedLayer::apply(x, reinterpret_cast<int64_t>(&layer),
                                  c10::make_intrusive<SavedContext>(ctx, hooks, layer_index));
}

}  // namespace dice
