# Records of the RocksDB reward log (docs/REWARD_LOG.md gives the key layout).
# Each value in the log is one of these structs, serialized with Cap'n Proto's standard
# (unpacked) message framing. Version rule: see task.capnp.
@0x84337de510f3843e;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dice::schema");

using import "task.capnp".Phase;
using import "verdict.capnp".Verdict;

# Column family "runs", key = run id.
struct RunRecord {
  runId @0 :Text;
  startedUnixMillis @1 :Int64;
  configYaml @2 :Text;        # the fully resolved config the run started with
  gitRevision @3 :Text;       # dice's source revision, if known
  host @4 :Text;
  note @5 :Text;
}

# Column family "steps", key = run id, 0x00, step (uint64 big-endian).
struct StepRecord {
  runId @0 :Text;
  step @1 :UInt64;
  phase @2 :Phase;
  policyVersion @3 :UInt64;
  numTasks @4 :UInt32;
  numCandidates @5 :UInt32;
  numCompiled @6 :UInt32;
  numCorrect @7 :UInt32;
  meanReward @8 :Float32;
  numGroupsDropped @9 :UInt32;   # groups whose rewards were all equal (no signal)
  loss @10 :Float32;
  klDivergence @11 :Float32;
  gradNorm @12 :Float32;
  startedUnixMillis @13 :Int64;
  finishedUnixMillis @14 :Int64;
  phaseName @15 :Text;           # the curriculum phase's name
  evaluation @16 :Bool;          # an eval phase's step: judged only, no policy update
  rewardMode @17 :Text;          # how verdicts were reached: "full" (compiled, run, compared on a
                                 # GPU), "compile_only" or "extraction_only" (no GPU: see
                                 # reward.mode); only "full" rewards mean correct kernels
  stalenessMean @18 :Float32;    # how stale the step's candidates were: the policy version its
  stalenessMax @19 :UInt32;      # update started from minus the one that sampled each (mean,
                                 # max); 0 in the synchronous loop
  rolloutAhead @20 :UInt32;      # learner.async.max_ahead the step ran under (0: synchronous)
  clipFraction @21 :Float32 = nan;  # share of scored tokens whose ratio left [1 - eps, 1 + eps]
                                    # (the last pass); NaN without an update that ran, and in
                                    # logs written before the field
  # How much the step's rollouts explored, over its judged groups: complete groups (every sample
  # judged or lost) with at least one scored sample, dropped ones included, skipped ones not.
  # Two texts are the same when their bytes are equal (Candidate.text, what the reward judged).
  # Logs written before these fields read 0 for each.
  groupSize @22 :UInt32;             # samples asked per task (the most a group can have)
  groupsJudged @23 :UInt32;          # judged groups
  groupsMixed @24 :UInt32;           # of those, groups whose rewards were not all equal
  judgedSamples @25 :UInt32;         # their scored samples, summed over the judged groups
  distinctTexts @26 :UInt32;         # their different response texts, summed over the groups
  droppedGroupsJudged @27 :UInt32;   # of the judged groups, those dropped (constant rewards)
  droppedDistinctTexts @28 :UInt32;  # different response texts, summed over the dropped ones
  # Verdicts of the step the reward service could not reach (internalError, sandboxUnavailable)
  # even on the worker's one retry (Verdict.retriedAfter); learner.internal_errors says whether
  # they were scored as failures (the default) or left out (rewardlog/step_internal_errors.h).
  numInternalErrors @29 :UInt32;            # 0 in logs written before the field
  internalErrorShare @30 :Float32 = nan;    # numInternalErrors / the step's verdicts, scored or
                                            # not; NaN without verdicts, and in logs written
                                            # before the field
}

# Column family "candidates", key = run id, 0x00, step (u64 BE), task id, 0x00, sample (u32 BE).
struct CandidateRecord {
  verdict @0 :Verdict;          # the full verdict (carries run, step, task, sample, hash)
  responseText @1 :Text;        # what the model wrote
  evaluatedSource @2 :Text;     # the file that was compiled and run (after extraction/splicing)
  advantage @3 :Float32;        # z-scored reward within the group; 0 if the group was dropped
  writtenUnixMillis @4 :Int64;
  weightsChecksum @5 :UInt64;   # the sampling worker's weights (Candidate.weightsChecksum)
  rolloutWorker @6 :Text;       # the worker that sampled it (Candidate.rolloutWorker)
  unmaskStep @7 :List(UInt16);  # the denoising trace: per response token, the step of its block
                                # at which it was unmasked (Candidate.unmaskStep)
  tokenTextEnds @8 :List(UInt32);  # per response token: the byte offset in responseText where
                                   # its text ends (Candidate.tokenTextEnds), so a reader splits
                                   # the text into the trace's tokens without a tokenizer; empty
                                   # when the worker could not give honest offsets
}

# Column family "tasks", key = run id, 0x00, task id. The task as the run first met it, written
# once per run and task (with the first step's candidates of it), so candidate records need not
# repeat the reference. Logs written before this family existed have none.
struct TaskRecord {
  runId @0 :Text;
  taskId @1 :Text;
  phase @2 :Phase;              # infill or e2e: how the task is put to the model
  level @3 :Text;               # the task file's curriculum level ("0".."3"); empty: none given
  referenceSource @4 :Text;     # the PyTorch reference (Task.referenceSource)
  infillPrefix @5 :Text;        # infill only: fixed text before the core; else empty
  infillSuffix @6 :Text;        # infill only: fixed text after the core; else empty
  firstStep @7 :UInt64;         # the step at which the run first met the task
  writtenUnixMillis @8 :Int64;
}

# Column family "kernels", key = source hash (hex text). One per distinct compiled source.
struct KernelRecord {
  sourceHash @0 :Text;
  obsoleteSource @1 :Text;        # never written: a candidate record holds the evaluated file
  obsoleteCompileFlags @2 :Text;  # never written: the source hash covers the flags
  obsoleteToolchain @3 :Text;     # never written: the source hash covers the toolchain
  compiled @4 :Bool;
  compileLog @5 :Text;          # trimmed compiler output
  compileSeconds @6 :Float32;   # the first build's wall clock (0: the compile cache held it)
  firstSeenRunId @7 :Text;
  firstSeenUnixMillis @8 :Int64;
}

# Column family "metrics", key = run id, 0x00, metric name, 0x00, step (u64 BE).
struct MetricRecord {
  runId @0 :Text;
  name @1 :Text;                # e.g. "rollout/tokens_per_s", "reward/correct_rate"
  step @2 :UInt64;
  value @3 :Float64;
  unixMillis @4 :Int64;
}
