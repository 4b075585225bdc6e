// Verdicts of repeated candidates (reward.reuse_verdicts): the same response text for the same
// task is judged once per worker, and every repeat gets a copy that names the original
// (Verdict.reusedFrom). Samples of one task repeat often, the more the surer the policy is
// (on the H200, 2026-12-02: a phase-1 step's 64 samples held 14-15 distinct texts;
// docs/BENCHMARKS.md, "one layout, 12 SFT epochs"); the compile cache already shares their
// builds, but each repeat still took a GPU slot for a ~3 s evaluation.
//
// A repeat that arrives while its original is being judged waits for that verdict. Verdicts that
// may not hold for a second run are not kept: a service fault (internalError,
// sandboxUnavailable) or a time limit (compileTimeout, timeout) under this moment's load; their
// repeats are judged again.
#pragma once

#include <capnp/common.h>
#include <kj/array.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "schemas/control.capnp.h"
#include "schemas/verdict.capnp.h"

namespace dice {

// Whether a verdict of this failure class stands for any run of the same candidate.
bool verdict_reusable(schema::FailureClass failure);

class VerdictMemo {
 public:
  using Stored = std::shared_ptr<const kj::Array<capnp::word>>;  // one Verdict, flat

  explicit VerdictMemo(std::size_t max_entries = 4096);

  // The memo key of `request`: its task (every field, canonical encoding) and the candidate's
  // response text. Nothing else of the request changes a verdict.
  static std::string key(schema::EvalRequest::Reader request);

  // The kept verdict of `key`, or null when the caller is to judge it itself and then call
  // finish(key, ...) exactly once. Waits while another caller is judging the same key.
  Stored acquire(const std::string& key);

  // The verdict the caller judged for `key`: kept when verdict_reusable (the oldest dropped past
  // max_entries), and the callers waiting on it woken.
  void finish(const std::string& key, schema::Verdict::Reader verdict);
  // The caller could not judge `key` (an exception): nothing kept, the waiters woken (one of
  // them judges it next).
  void abandon(const std::string& key);

  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable finished_;
  std::set<std::string> judging_;
  std::unordered_map<std::string, Stored> kept_;
  std::deque<std::string> order_;  // kept keys, oldest first
  std::size_t max_entries_;
};

// `body` becomes a copy of the kept verdict `stored`, as the verdict of `request` (its ids,
// step, group and sample, `worker_id`), with reusedFrom = the original's workId, no GPU slot, and
// zero compile and eval seconds (this candidate cost nothing). Returns the verdict.
schema::Verdict::Builder copy_reused_verdict(const VerdictMemo::Stored& stored,
                                             schema::EvalRequest::Reader request,
                                             const std::string& worker_id,
                                             schema::Envelope::Body::Builder body);

}  // namespace dice
