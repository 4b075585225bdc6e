#include "model/layer_checkpoint.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

namespace dice {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The layer travels as its address: it is owned by the model, which outlives the backward pass
// of any forward it ran (the trainer runs backward before it lets the model go).
struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  static at::Tensor forward(AutogradContext* saved, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin, const at::Tensor& mask,
                            const at::Tensor& view_clean, const at::Tensor& view_mask,
                            int64_t clean_rows, int64_t layer) {
    saved->save_for_backward({x, cos, sin, mask, view_clean, view_mask});
    saved->saved_data["layer"] = layer;
    saved->saved_data["clean_rows"] = clean_rows;
    AttentionContext ctx;
    ctx.cos = cos;
    ctx.sin = sin;
    ctx.mask = mask;
    ctx.view_clean = view_clean;
    ctx.view_mask = view_mask;
    ctx.clean_rows = clean_rows;
    return reinterpret_cast<Qwen3DecoderLayerImpl*>(layer)->forward(x, ctx);  // no grad here
  }

  static variable_list backward(AutogradContext* saved, variable_list grad_outputs) {
    variable_list inputs = saved->get_saved_variables();
    auto* layer = reinterpret_cast<Qwen3DecoderLayerImpl*>(saved->saved_data["layer"].toInt());
    at::Tensor x = inputs[0].detach().requires_grad_(true);
    AttentionContext ctx;
    ctx.cos = inputs[1];
    ctx.sin = inputs[2];
    ctx.mask = inputs[3];
    ctx.view_clean = inputs[4];
    ctx.view_mask = inputs[5];
    ctx.clean_rows = saved->saved_data["clean_rows"].toInt();
    at::Tensor y;
    {
      at::AutoGradMode grad(true);
      y = layer->forward(x, ctx);
    }
    // Accumulates the layer's parameter gradients and x's.
    torch::autograd::backward({y}, {grad_outputs[0]});
    return {x.grad(),     at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor checkpointed_layer(Qwen3DecoderLayerImpl& layer, const at::Tensor& x,
                              const AttentionContext& ctx) {
  TORCH_CHECK(ctx.cache == nullptr, "checkpointed_layer: training layouts only (no KV cache)");
  // A custom function's tensor arguments must all be defined (LibTorch 1.13 takes each one's
  // device): an empty placeholder stands for the shared-clean fields of other layouts.
  const at::Tensor none = at::empty({0}, ctx.cos.options());
  return CheckpointedLayer::apply(
      x, ctx.cos, ctx.sin, ctx.mask, ctx.clean_rows > 0 ? ctx.view_clean : none,
      ctx.clean_rows > 0 ? ctx.view_mask : none, ctx.clean_rows, reinterpret_cast<int64_t>(&layer));
}

}  // namespace dice
