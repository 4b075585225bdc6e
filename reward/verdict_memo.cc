#include "reward/verdict_memo.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <string_view>

#include "common/hash/content_hash.h"
#include "reward/pipeline.h"

namespace dice {

bool verdict_reusable(schema::FailureClass failure) {
  using FC = schema::FailureClass;
  switch (failure) {
    case FC::INTERNAL_ERROR:
    case FC::SANDBOX_UNAVAILABLE:
    case FC::COMPILE_TIMEOUT:
    case FC::TIMEOUT:
      return false;
    default:
      return true;
  }
}

VerdictMemo::VerdictMemo(std::size_t max_entries) : max_entries_(max_entries) {}

std::string VerdictMemo::key(schema::EvalRequest::Reader request) {
  kj::Array<capnp::word> task = capnp::canonicalize(request.getTask());
  auto bytes = task.asBytes();
  const auto text = request.getCandidate().getText();
  return content_hash_hex_parts(
      {std::string_view(reinterpret_cast<const char*>(bytes.begin()), bytes.size()),
       std::string_view(text.cStr(), text.size())});
}

VerdictMemo::Stored VerdictMemo::acquire(const std::string& key) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto kept = kept_.find(key);
    if (kept != kept_.end()) return kept->second;
    if (judging_.insert(key).second) return nullptr;  // the caller judges it
    finished_.wait(lock);
  }
}

void VerdictMemo::finish(const std::string& key, schema::Verdict::Reader verdict) {
  Stored stored;
  if (verdict_reusable(verdict.getFailure()) && max_entries_ > 0) {
    capnp::MallocMessageBuilder copy;
    copy.setRoot(verdict);
    stored = std::make_shared<const kj::Array<capnp::word>>(capnp::messageToFlatArray(copy));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    judging_.erase(key);
    if (stored && kept_.emplace(key, stored).second) {
      order_.push_back(key);
      while (order_.size() > max_entries_) {
        kept_.erase(order_.front());
        order_.pop_front();
      }
    }
  }
  finished_.notify_all();
}

void VerdictMemo::abandon(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    judging_.erase(key);
  }
  finished_.notify_all();
}

std::size_t VerdictMemo::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_.size();
}

schema::Verdict::Builder copy_reused_verdict(const VerdictMemo::Stored& stored,
                                             schema::EvalRequest::Reader request,
                                             const std::string& worker_id,
                                             schema::Envelope::Body::Builder body) {
  capnp::FlatArrayMessageReader reader(*stored);
  auto original = reader.getRoot<schema::Verdict>();
  body.setVerdict(original);  // every field, also those added after this was written
  schema::Verdict::Builder out = body.getVerdict();
  set_verdict_identity(request, worker_id, out);
  out.setGpuSlot("");
  out.getTimings().setCompileSeconds(0);
  out.getTimings().setEvalSeconds(0);
  for (auto build : out.getBuilds()) build.setCompileSeconds(0);
  out.setReusedFrom(original.getWorkId());
  return out;
}

}  // namespace dice
