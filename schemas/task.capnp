# Tasks: what the model is asked to write.
#
# Version rule (all dice schemas): add fields only at the end with the next ordinal; never
# renumber, retype or reuse an ordinal; a field that goes away is renamed `obsoleteX` and kept.
# Readers must accept messages with fields they do not know (Cap'n Proto does this for free).
# An incompatible change bumps `Envelope.protocolVersion` in control.capnp.
@0xa144a1bb22a1b835;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dice::schema");

enum Phase {
  infill @0;  # BiC-RL phase 1: the model writes only the core between a fixed prefix and suffix
  e2e @1;     # BiC-RL phase 2: the model writes the whole ModelNew file
}

struct Task {
  id @0 :Text;                # stable task id, e.g. "e2e-0123" or the dataset's own id ("6995")
  phase @1 :Phase;
  level @2 :UInt8;            # curriculum level: 0..3 (1 single ops, 2 fusions, 3 architectures)
  prompt @3 :Text;            # the full prompt text given to the model (template already applied)
  referenceSource @4 :Text;   # the PyTorch reference: KernelBench problem file (class Model,
                              # get_inputs, get_init_inputs)
  infillPrefix @5 :Text;      # phase 1 only: fixed text before the core (imports); else empty
  infillSuffix @6 :Text;      # phase 1 only: fixed text after the core (cpp decls, load_inline,
                              # class ModelNew); else empty
  timeoutSeconds @7 :Float32; # per-task evaluation wall-clock limit; 0 = the reward service default
  shapeVariants @8 :List(ShapeVariant);
                              # other shapes the task's kernel must hold for (the task file's
                              # shape_variants); empty: only the reference's own. Each is one more
                              # input set the judge draws with those sizes set (judge.py)
  wantTiming @9 :Bool = true; # false: nothing reads this verdict's speedup (an rl phase under a
                              # binary reward), so the reward service does not time the candidate
                              # even with reward.timing.enabled
  rewardPolicy @10 :RewardPolicySpec;
                              # how this task's verdicts become rewards (a curriculum phase's
                              # reward_policy); unset: the reward service's reward.policy
}

# A reward policy as options/reward_options.h's RewardPolicyOptions has it.
enum RewardPolicyKind {
  binary @0;            # 1 if it compiles and is correct
  speedupThreshold @1;  # ... and is at least minSpeedup times faster than eager
}

struct RewardPolicySpec {
  kind @0 :RewardPolicyKind;
  minSpeedup @1 :Float64 = 1.0;
}

# One other shape of a task: module-level integers of the reference (batch_size, dim, ...) set to
# these values before get_inputs(). They vary the inputs only: get_init_inputs() must not change.
struct ShapeVariant {
  sizes @0 :List(SizeValue);
}

struct SizeValue {
  name @0 :Text;   # a module-level integer of the reference source
  value @1 :Int64;
}
