# Rollout: the learner asks for samples, rollout workers answer with candidates.
# Version rule: see task.capnp.
@0xee0c6107ef4b51cf;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dice::schema");

using import "task.capnp".Task;

enum Remasking {
  lowConfidenceStatic @0;   # commit the top-n most confident tokens each step
  lowConfidenceDynamic @1;  # commit all above `threshold` if at least n, else the top-n
  sequential @2;            # commit left to right, n per step
  entropyBounded @3;        # commit lowest-entropy tokens while their summed entropy stays bounded
  random @4;                # commit n masked positions chosen uniformly at random, blind to the draws
}

struct SamplingParams {
  temperature @0 :Float32 = 1.0;  # 0 means greedy
  topP @1 :Float32 = 1.0;         # 1.0 disables nucleus sampling
  topK @2 :UInt32 = 0;            # 0 disables top-k
  maxNewTokens @3 :UInt32 = 4096;
  blockSize @4 :UInt32 = 4;       # tokens per diffusion block
  denoisingSteps @5 :UInt32 = 4;  # steps per block
  remasking @6 :Remasking = lowConfidenceDynamic;
  threshold @7 :Float32 = 0.9;    # confidence threshold for lowConfidenceDynamic / entropy bound
  obsoleteSeed @8 :UInt64;        # never read: a rollout worker's samples follow its sampler's
                                  # own seed
  stopTokenIds @9 :List(UInt32);  # empty = the model's defaults (151645, 151643)
}

struct RolloutRequest {
  workId @0 :UInt64;          # unique per piece of work; replies and retries carry it (idempotence)
  runId @1 :Text;
  step @2 :UInt64;            # learner step this rollout feeds
  group @3 :UInt64;           # group id: all samples of one task in one step share it
  task @4 :Task;
  numSamples @5 :UInt32;      # samples wanted for this group (DICE: 16)
  sampling @6 :SamplingParams;
  minPolicyVersion @7 :UInt64;  # a worker holding older weights must update before sampling
  weightsDir @8 :Text;        # checkpoint folder of minPolicyVersion (empty: the initial policy),
                              # so a worker that missed a WeightsUpdate (restarted) catches up
}

struct Candidate {
  workId @0 :UInt64;          # the RolloutRequest this answers
  runId @1 :Text;
  step @2 :UInt64;
  taskId @3 :Text;
  group @4 :UInt64;
  sampleIndex @5 :UInt32;     # 0 .. numSamples-1 within the group
  policyVersion @6 :UInt64;   # the weights version that produced every token of this sample
  promptTokenIds @7 :List(UInt32);
  tokenIds @8 :List(UInt32);  # generated tokens only (the response), stop token included if hit
  text @9 :Text;              # detokenized response
  unmaskStep @10 :List(UInt16);  # per response token: the denoising step of its block (0-based)
                                 # at which it was unmasked -- the trace TraceRL trains on
  tokenLogProbs @11 :List(Float32);  # per response token: log-prob under the sampling policy
  finishReason @12 :FinishReason;
  generationSeconds @13 :Float32;
  rolloutWorker @14 :Text;    # worker id that produced it, for debugging
  tailTokenIds @15 :List(UInt32);   # the rest of the final block after the end (a stop token or
                                    # maxNewTokens cut it): not part of the response, but context
                                    # the last block's tokens were drawn with (TraceRL rebuilds it)
  tailUnmaskStep @16 :List(UInt16);  # per tail token: the step that unmasked it
  weightsChecksum @17 :UInt64;  # the checksum of the weights that sampled it, computed by the
                                # worker from the checkpoint it loaded
                                # (model/checkpoint/weights_checksum.h); 0: weights that came by
                                # NCCL broadcast (no file to sum)
  tokenTextEnds @18 :List(UInt32);  # per response token: the byte offset in `text` where its
                                    # text ends (special tokens end where the one before did).
                                    # Sent by the worker, which holds the tokenizer, so the reward
                                    # log can show the trace over the text with no tokenizer.
                                    # Empty when `text` is not the tokens' bytes joined (ill-formed
                                    # UTF-8 was replaced): no offset would be honest then

  enum FinishReason {
    stopToken @0;
    maxTokens @1;
    aborted @2;     # weights changed mid-sequence and the config says abort
  }
}
