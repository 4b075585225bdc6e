// LayerParameterHooks: where a decoder layer's weights come from and where its gradients go, for
// sharded parameters (ZeRO-3 / FSDP style, issue 53 item 2). With hooks set on the model
// (Qwen3ModelImpl::parameter_hooks), each layer's forward and its backward recomputation run
// between calls that let a learner keep only 1/N of the layer's weights between uses:
//
//   forward of layer i       materialize(i)  layer i, no grad  release_after_forward(i)
//   backward of layer i      materialize(i)  recompute with grad, backward  after_backward(i)
//
// so peak weight memory is one layer's full weights plus 1/N of the model. The backward half
// exists only under activation checkpointing (layer_checkpoint.h): without it autograd saves
// every layer's full weights for the backward pass from the forward on, and freeing them would
// break the backward. The model therefore refuses hooks unless activation_checkpointing is on.
// Forwards without gradients (reference log-probabilities, evaluation) call materialize and
// release_after_forward around each layer and nothing else.
//
// learner/parallel/parameter_shards.h implements them over the learner's GradientCollective (the
// reduce-scatter and all-gather that OptimizerShard's ZeRO-1/2 step already uses), rank r of N:
//   - Between uses, layer i's parameters hold no storage (param.set_ to an empty tensor under
//     NoGradGuard, so each stays the same autograd leaf, the tensor the optimizer and weight
//     sync know); rank r keeps chunk r of the layer's flat buffer (the layer's parameters
//     concatenated, padded to N equal chunks).
//   - materialize(i): a fresh flat buffer, chunk r copied in, all-gathered, each parameter
//     pointed at its slice (param.set_(flat.narrow(...).view(shape))).
//   - release_after_forward(i): every parameter set back to empty; the buffer goes with them.
//   - after_backward(i): the layer's gradients (complete for this forward once the recompute's
//     backward has accumulated them) flattened in the same layout, reduce-scattered, chunk r added
//     to the shard's gradient (micro-batches accumulate there); .grad reset, weights released.
//   - Embeddings, the final norm and lm_head (tied or not) stay replicated and out of the hooks:
//     they are used outside the layers (embedding before the first, norm and lm_head after the
//     last) and their gradients go through the existing bucketed reducer (or ZeRO-1/2).
// OptimizerShard (learner/parallel/optimizer_shard.h) steps the layers' chunks with the rest and
// clips over all of them; learner.data_parallel.shard: parameters turns it on, and DataParallel
// (learner/parallel/data_parallel.h) sets the hooks only inside a step, gathering the layers whole
// on GPU 0 between steps for the checkpoint, the weight push and the learner's own forwards. Not
// done: prefetch of the next layer and stream overlap. tests/learner/parallel/ checks it on 1 to 4
// CPU replicas against unsharded ones (parameter_shards_test.cc, data_parallel_test.cc).
#pragma once

#include <cstdint>

namespace dice {

// Called on the thread that runs the forward and the backward pass; layer indices are those of
// Qwen3ModelImpl::layers. An implementation may throw (a failed collective): the forward or the
// backward pass then fails with it. The hooks must outlive the backward pass of every forward
// that ran with them (the layers' autograd nodes call them).
class LayerParameterHooks {
 public:
  virtual ~LayerParameterHooks() = default;
  // Layer `layer`'s parameters must hold their full values when this returns: before its
  // forward, and again before its backward recomputation.
  virtual void materialize(int64_t layer) = 0;
  // The forward of `layer` is done (no gradients were recorded): its full weights may be freed.
  virtual void release_after_forward(int64_t layer) = 0;
  // The backward of `layer` is done: each of its parameters' .grad holds this forward's gradient
  // added to what was there. The hooks may move the gradients out (reset .grad) and free the
  // full weights.
  virtual void after_backward(int64_t layer) = 0;
};

}  // namespace dice
