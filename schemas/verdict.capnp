# Reward: a candidate goes to a reward worker, a verdict comes back.
# Version rule: see task.capnp.
@0xdf3b0dcab2ac43fd;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dice::schema");

using import "task.capnp".Task;
using import "rollout.capnp".Candidate;

struct EvalRequest {
  workId @0 :UInt64;      # unique per evaluation; retries carry the same id
  task @1 :Task;
  candidate @2 :Candidate;
}

# Why a candidate got no reward. The first failure in pipeline order wins.
enum FailureClass {
  none @0;              # compiled and correct
  noCodeBlock @1;       # the response has no fenced code block
  skeletonAltered @2;   # phase 1: the spliced file does not keep the task's prefix/suffix
  syntaxError @3;       # the Python file does not parse
  staticCheck @4;       # a static anti-cheat rule rejected the source (see findings)
  compileError @5;      # nvcc or the host compiler failed
  compileTimeout @6;
  importError @7;       # the module or ModelNew could not be loaded/constructed
  runtimeError @8;      # an exception or CUDA error while running forward
  timeout @9;           # evaluation passed its wall-clock limit
  resourceLimit @10;    # memory, process, file-size or CPU limit hit
  sandboxViolation @11; # network, writes outside scratch, forbidden syscalls
  shapeMismatch @12;
  incorrect @13;        # values outside tolerance
  antiCheat @14;        # a dynamic anti-cheat check failed (see findings)
  crashed @15;          # the evaluation process died (signal) without a report
  internalError @16;    # the reward service itself failed; not the candidate's fault
  sandboxUnavailable @17; # a sandbox layer (namespace, root, seccomp, no_new_privs, a required
                          # cgroup) could not be set up, so the command was not run; the excerpt
                          # names the layer and errno. Not the candidate's fault, never a reward
  workerLost @18;       # the reward workers judging it were lost (dead, restarted) on each of the
                        # learner's cluster.transport.max_attempts dispatches: the learner judged it
                        # a failure itself, reward 0, so that a candidate that kills its worker
                        # does not go round every worker (the excerpt names them)
}

struct Finding {
  check @0 :Text;     # stable rule name, e.g. "torch-op-in-forward", "kernel-not-launched"
  detail @1 :Text;    # where and what: "line 42: torch.matmul in ModelNew.forward"
  fatal @2 :Bool;     # true if this finding alone zeroes the reward
}

struct Timings {
  compileSeconds @0 :Float32;    # 0 when the kernel cache hit
  evalSeconds @1 :Float32;       # wall clock of the sandboxed evaluation process
  kernelMsMean @2 :Float32;      # candidate forward, ms a call by the judge's clock, mean over
                                 # the timing rounds (docs/SECURITY.md, "Timing that belongs to
                                 # the kernel")
  kernelMsStd @3 :Float32;       # population standard deviation over the rounds
  referenceMsMean @4 :Float32;   # eager PyTorch reference in the same slot, timed the same way
                                 # once the candidate's processes are gone
  referenceMsStd @5 :Float32;
  timingTrials @6 :UInt32;       # timing rounds (independent measurements) behind the means
}

struct Verdict {
  workId @0 :UInt64;
  runId @1 :Text;
  step @2 :UInt64;
  taskId @3 :Text;
  group @4 :UInt64;
  sampleIndex @5 :UInt32;
  policyVersion @6 :UInt64;
  compiled @7 :Bool;
  correct @8 :Bool;
  reward @9 :Float32;            # per the reward policy (DICE: 1 if compiled && correct else 0)
  speedup @10 :Float32;          # referenceMsMean / kernelMsMean; 0 when not timed
  timings @11 :Timings;
  failure @12 :FailureClass;
  logExcerpt @13 :Text;          # trimmed compiler/runtime output explaining the failure
  findings @14 :List(Finding);   # anti-cheat findings, fatal or not
  obsoleteSourceHash @15 :Text;  # protocol 3: the builds' hashes, comma-joined (now `builds`)
  correctnessTrials @16 :UInt32;
  maxAbsError @17 :Float32;      # largest |candidate - reference| seen over the trials
  rewardWorker @18 :Text;        # worker id, for debugging
  gpuSlot @19 :Text;             # e.g. "0" or "0/2" (GPU 0, share 2)
  builds @20 :List(ModuleBuild); # one per load_inline extension of the candidate, in build order;
                                 # empty when it failed before compiling (the reward log's kernel
                                 # records come from these)
  evaluatedSource @21 :Text;     # the Python file compiled and run (the response's code block,
                                 # spliced into the skeleton in phase 1); empty when extraction
                                 # failed
  reusedFrom @22 :UInt64;        # 0: this candidate was judged itself. Else the workId of the
                                 # request whose verdict this copies: the same response text for
                                 # the same task, judged by the same worker (reward.reuse_verdicts);
                                 # its timings' compile and eval seconds are then 0
  retriedAfter @23 :Text;        # empty: evaluated once. Else the first evaluation's fault of the
                                 # reward service (internalError or sandboxUnavailable), which made
                                 # the worker evaluate the candidate once more on another GPU slot
                                 # (reward/evaluation_retry.h): "slot 0/1: internalError: <detail>";
                                 # gpuSlot, failure, logExcerpt and timings are the second
                                 # evaluation's (a reused verdict keeps its original's). A
                                 # verdict that is still a service fault after it counts as the
                                 # candidate's failure (learner.internal_errors)
}

# One compiled extension of a candidate.
struct ModuleBuild {
  sourceHash @0 :Text;       # hex content hash of its sources + flags + toolchain: its key in the
                             # reward log's kernels and in the compile cache
  compiled @1 :Bool;
  compileSeconds @2 :Float32;  # this build's wall clock; 0 when the compile cache held it
  log @3 :Text;              # trimmed compiler output when it did not compile; else empty
}
