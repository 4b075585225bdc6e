// A stand-in worker service for worker_cancel_test: the real worker loop (run_worker_loop) with a
// handler whose every EvalRequest runs its task's timeoutSeconds unless the learner cancels it, as
// a reward worker's sandboxed run would (the cancellation's callback wakes it, as it would kill
// the run).
//   slow_worker_test_double ENDPOINT WORKER_ID
// Prints "started N" when a handler takes item N, "stopped N" when it saw its cancel and
// "answered N" when it sent its verdict; exits 0 after the learner's Shutdown.
#include <capnp/message.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "net/service/metrics_registry.h"
#include "net/service/shutdown_signal.h"
#include "net/service/worker_loop.h"

namespace {

using dice::Status;
using dice::service::ResultSink;

void say(const char* what, std::uint64_t work_id) {
  std::printf("%s %llu\n", what, static_cast<unsigned long long>(work_id));
  std::fflush(stdout);
}

// Waits the task's timeoutSeconds, or until the item is cancelled; then answers with a Verdict
// (dropped by the sink when cancelled).
Status handle(const dice::wire::Decoded<dice::schema::Envelope>& work, ResultSink& sink) {
  auto request = work.root().getBody().getEvalRequest();
  const std::uint64_t work_id = request.getWorkId();
  const auto item_time = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(request.getTask().getTimeoutSeconds()));
  say("started", work_id);
  std::mutex mutex;
  std::condition_variable woken;
  bool stop = false;
  {
    auto registration = dice::on_cancel(sink.cancellation(), [&] {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
      woken.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex);
    woken.wait_for(lock, item_time, [&] { return stop; });
  }
  if (stop) say("stopped", work_id);
  capnp::MallocMessageBuilder message;
  auto verdict = sink.init_envelope(message).getBody().initVerdict();
  verdict.setWorkId(work_id);
  verdict.setReward(1.0f);
  DICE_RETURN_IF_ERROR(sink.send_last(message));
  if (!stop) say("answered", work_id);
  return Status::ok_status();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ENDPOINT WORKER_ID\n", argv[0]);
    return 2;
  }
  auto shutdown = dice::service::ShutdownSignal::install();
  if (!shutdown.ok()) {
    std::fprintf(stderr, "%s\n", shutdown.status().to_string().c_str());
    return 1;
  }
  dice::service::WorkerLoopOptions options;
  options.transport.learner_endpoint = argv[1];
  options.transport.worker_id = argv[2];
  options.transport.role = dice::schema::Role::REWARD;
  options.transport.capacity = 1;
  options.transport.heartbeat_interval_ms = 100;
  dice::service::MetricsRegistry registry;
  return dice::service::run_worker_loop(options, registry, *shutdown.value(), handle, nullptr);
}
