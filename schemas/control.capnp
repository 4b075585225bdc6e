# The wire: every ZeroMQ message between dice services is one Envelope.
# Version rule: see task.capnp. protocolVersion changes only on an incompatible change; a peer
# that receives another version logs it and drops the message.
@0xa5b8024b6026ad4d;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dice::schema");

using import "rollout.capnp".RolloutRequest;
using import "rollout.capnp".Candidate;
using import "verdict.capnp".EvalRequest;
using import "verdict.capnp".Verdict;

# 2: a worker's Ack carries the credit its finish frees (Ack.credits) instead of a separate
#    Credit; a version-1 learner would never get those credits back.
# 3: a work item's last result may carry its Ack (Envelope.ack) instead of a separate Ack message;
#    a version-2 learner would ignore it and never complete the item.
# 4: a Verdict names its builds in Verdict.builds and carries the evaluated file
#    (Verdict.evaluatedSource) instead of comma-joined hashes in sourceHash; a version-3 learner
#    would log no kernel records and no evaluated sources.
const protocolVersion :UInt16 = 4;

enum Role {
  learner @0;
  rollout @1;
  reward @2;
  supervisor @3;   # dice-cluster's local supervisor
}

enum WorkerState {
  starting @0;
  idle @1;
  busy @2;
  draining @3;     # finishing in-flight work after SIGTERM, taking no new work
  updatingWeights @4;
}

# A worker introduces itself; sent on connect and again after reconnecting to a restarted learner.
struct Hello {
  workerId @0 :Text;      # unique and stable across reconnects: "<node>/<role>/<index>"
  role @1 :Role;
  node @2 :Text;          # host name
  pid @3 :UInt32;
  gpuSlots @4 :List(Text);  # GPU slots this worker owns, e.g. ["0"], ["0/2"]; empty on CPU
  capacity @5 :UInt32;    # pieces of work it may hold at once (its credits)
  policyVersion @6 :UInt64;  # rollout: the weights it holds
  metricsEndpoint @7 :Text;  # "http://host:port/metrics"
}

# Both directions, every heartbeat interval. Silence for N intervals means dead.
struct Heartbeat {
  workerId @0 :Text;
  state @1 :WorkerState;
  inFlight @2 :UInt32;       # work items held now
  completed @3 :UInt64;      # work items finished since start
  policyVersion @4 :UInt64;
  unixMillis @5 :Int64;      # sender's clock, for age display only
}

# A worker grants the learner `credits` more work items (readiness-based load balancing).
struct Credit {
  workerId @0 :Text;
  credits @1 :UInt32;
}

# The receiver got the work item and will not need it sent again.
struct Ack {
  workId @0 :UInt64;
  credits @1 :UInt32;   # a Credit folded in: the slots this finish frees (one message, not two)
}

# New policy weights for rollout workers.
struct WeightsUpdate {
  policyVersion @0 :UInt64;
  union {
    checkpointDir @1 :Text;  # a Hugging Face-layout directory readable by the worker
    nccl @2 :NcclBroadcast;  # weights arrive by NCCL broadcast from the learner
  }
  abortInFlight @3 :Bool;    # true: drop sequences started on older weights; false: finish them

  struct NcclBroadcast {
    uniqueId @0 :Data;       # ncclUniqueId bytes from the learner (rank 0)
    worldSize @1 :UInt32;
    rank @2 :UInt32;         # this worker's rank
    tensors @3 :List(TensorSpec);  # broadcast order
    # Added for broadcasts to every worker at once (the learner's socket cannot address one):
    workerIds @4 :List(Text);  # rank r's worker id is workerIds[r - 1] (rank 0 is the learner);
                               # empty: the message is for one worker, whose rank is `rank`
    fallbackDir @5 :Text;      # the same weights as a checkpoint folder, for a worker that is not
                               # in workerIds or cannot join the broadcast
    timeoutMs @6 :UInt32;      # longest wait for the communicator and for the broadcast; 0: 60000
  }
  struct TensorSpec {
    name @0 :Text;           # Hugging Face parameter name
    dtype @1 :Text;          # "bf16", "f16", "f32"
    shape @2 :List(UInt64);
  }
}

# Supervisor or learner to a worker: stop taking work; finish (drain) or drop in-flight work.
struct Shutdown {
  drain @0 :Bool;
  reason @1 :Text;
}

# The learner to the worker it sent a work item to: the item's answer is no longer wanted (its
# group expired or was skipped). The worker stops the item as early as it can (one still queued
# there is dropped; one running has its sandboxed runs killed where it has any) and acks it
# without a result, which frees its slot; a result already on its way is dropped by the learner.
# A cancel for an item the worker does not hold (finished, never received) is ignored. A worker
# that predates this message drops it and answers the item as before: the same answer, ignored.
struct Cancel {
  workId @0 :UInt64;    # the item's id, never 0
}

# A peer could not handle a message; sent back instead of crashing.
struct Error {
  workId @0 :UInt64;    # 0 if not about a work item
  message @1 :Text;
}

struct Envelope {
  protocolVersion @0 :UInt16;
  senderId @1 :Text;
  runId @2 :Text;
  sentUnixMillis @3 :Int64;
  body :union {
    hello @4 :Hello;
    heartbeat @5 :Heartbeat;
    credit @6 :Credit;
    ack @7 :Ack;
    rolloutRequest @8 :RolloutRequest;
    candidate @9 :Candidate;
    evalRequest @10 :EvalRequest;
    verdict @11 :Verdict;
    weightsUpdate @12 :WeightsUpdate;
    shutdown @13 :Shutdown;
    error @14 :Error;
    cancel @16 :Cancel;  # learner -> worker only
  }
  # Set on a work item's last result (Candidate, Verdict, Error): the sender is done with the item,
  # exactly as if an Ack body followed this message. Handled after the body. Unset: no ack.
  ack @15 :Ack;
}
