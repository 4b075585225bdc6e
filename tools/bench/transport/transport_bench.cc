// transport_bench: messages/s and round-trip latency of the dice transport against a bare ZeroMQ
// ROUTER/DEALER ping-pong, for each payload size, over TCP loopback in one process (the worker
// side runs on its own thread, or with --worker process in a child process). The bare ping-pong
// runs twice: one context per side (zmq_two_contexts), as the dice sides have and two processes
// have (an I/O thread each): the reference of the 1.5x target, since a learner and a worker are
// two processes; and both sockets in one ZeroMQ context (zmq_router_dealer: one I/O thread serves
// both ends, which only one process can have; the reference until the runs of 2026-11-30 in
// docs/BENCHMARKS.md, "the spin before a wait sleeps"). After each size, the same-run ratios to
// both.
//
//   transport_bench [--sizes 1024,65536] [--round-trips 2000] [--window 16]
//                   [--peers bare,dice] [--latency-round-trips N (default: --round-trips)]
//                   [--malloc tuned|default] [--ack fused|separate] [--worker thread|process]
//                   [--threads on|off] [--spin auto|MICROSECONDS]
//
// --peers dice_curve runs the dice transport again with ZeroMQ CURVE on (fresh keys; what
// cluster.transport.curve turns on), and with "dice" beside it prints the cost as ratios.
// --worker process runs the worker side of the dice transport and of the context-per-side
// ping-pong in a child process (this executable again), as a learner and a worker run in a
// cluster; CPU and context-switch figures then add up both processes. The shared-context
// ping-pong cannot span two processes and stays on a thread.
// --peers: "bare" runs both ping-pongs, "shared" or "apart" one of them, "dice" the transport.
// --threads on: after each row, every thread's CPU time per round trip in the throughput phase
// (both processes with --worker process), which shows the thread that bounds round trips/s on a
// machine with cores to spare.
// --spin: the dice transport's poll_spin_us on both sides (see net/transport/wakeup.h); auto,
// the services' default, spins 50 us where the process may run on 8 or more CPUs, not below.
//
// Latency: one request at a time, p50/p99 of the round trip. Throughput: `window` requests kept
// in flight, round trips completed per second. The dice side pays for what a real run pays:
// building and encoding an EvalRequest envelope, decoding and validating it on the worker, a
// Verdict of the same size back (its logExcerpt), and the Ack that returns the credit. --ack fused
// (the default) sends the Verdict with the Ack in it (WorkerConnection::finish(id, message)), one
// message back per item; separate sends them as two (send_result() then finish(id)).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/thread_name.h"
#include "net/transport/allocator_tuning.h"
#include "net/transport/curve_keys.h"
#include "net/transport/work_dispatcher.h"
#include "net/transport/worker_connection.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using namespace dice;
using namespace dice::transport;

struct Flags {
  std::vector<std::size_t> sizes = {1024, 65536};
  int round_trips = 2000;
  int latency_round_trips = -1;  // --latency-round-trips: -1 is round_trips; 0 skips (profiling)
  int window = 16;
  // --peers bare,dice: which sides to run (one alone is for profiling). "bare" is both bare
  // ping-pongs; "shared" or "apart" names one of them.
  bool run_bare_shared = true;
  bool run_bare_apart = true;
  bool run_dice = true;
  // --malloc tuned|default: tuned applies what every service applies at start-up
  // (tune_allocator_for_messages()); it applies to the bare peers too, which share the process.
  bool tune_malloc = true;
  // --ack fused|separate: whether the worker's Verdict carries its Ack (see the file comment).
  bool fused_ack = true;
  // --worker thread|process: the worker side of every peer on a thread of this process, or in a
  // forked child process with its own ZeroMQ context, as a learner and a worker run in a cluster.
  bool worker_process = false;
  // --threads on|off: print each thread's CPU per round trip after each row.
  bool per_thread = false;
  // --spin auto|N: DispatcherOptions/WorkerOptions::poll_spin_us for the dice sides.
  int spin_us = kAutoSpin;
  // --peers ...,dice_curve: the dice transport again with CURVE on (cluster.transport.curve).
  bool run_dice_curve = false;
};

// The worker's CURVE keys for the dice_curve peer: the learner's public key and its own pair,
// fresh for each run (empty: CURVE off).
struct BenchKeys {
  CurveOptions learner;
  CurveOptions worker;
};

BenchKeys make_bench_keys() {
  auto learner = make_curve_key_pair();
  auto worker = make_curve_key_pair();
  if (!learner.ok() || !worker.ok()) {
    std::cerr << "transport bench: no CURVE in this libzmq\n";
    std::exit(1);
  }
  BenchKeys keys;
  keys.learner.public_key = learner->public_key;
  keys.learner.secret_key = learner->secret_key;
  // The key name binds the worker id dice_echo uses ("bench/rollout/0").
  keys.learner.client_keys = {{worker->public_key, "rollout-0"}};
  keys.worker.server_key = learner->public_key;
  keys.worker.public_key = worker->public_key;
  keys.worker.secret_key = worker->secret_key;
  return keys;
}

struct Figures {
  double messages_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  // Of the throughput phase, per round trip, all threads of the process (both ends and their
  // ZeroMQ I/O threads): CPU time, and context switches (each a thread that slept and was woken).
  // Steadier than round trips/s on a shared VM, whose wake-up latency drifts between runs.
  double cpu_us_per_round_trip = 0;
  double switches_per_round_trip = 0;
  // With --threads on: "process/thread name (tid)" and its CPU us per round trip, busiest first.
  std::vector<std::pair<std::string, double>> thread_cpu_us_per_round_trip;
};

// On-CPU time of every thread of `pids` (/proc/PID/task/TID/schedstat, nanoseconds: finer than
// getrusage's ticks), keyed "learner|worker:name (tid)".
std::map<std::string, double> thread_cpu_ns(const std::vector<pid_t>& pids) {
  namespace fs = std::filesystem;
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    const fs::path tasks = "/proc/" + std::to_string(pids[i]) + "/task";
    std::error_code error;
    for (const auto& task : fs::directory_iterator(tasks, error)) {
      std::string name;
      double ns = 0;
      std::ifstream(task.path() / "comm") >> name;
      std::ifstream(task.path() / "schedstat") >> ns;
      out[std::string(i == 0 ? "learner" : "worker") + ":" + name + " (" +
          task.path().filename().string() + ")"] = ns;
    }
  }
  return out;
}

void set_thread_figures(const std::map<std::string, double>& before,
                        const std::map<std::string, double>& after, int round_trips, Figures* f) {
  for (const auto& [thread, ns] : after) {
    const auto was = before.find(thread);
    const double us = (ns - (was == before.end() ? 0 : was->second)) / 1e3 / round_trips;
    if (us >= 0.01) f->thread_cpu_us_per_round_trip.emplace_back(thread, us);
  }
  std::sort(f->thread_cpu_us_per_round_trip.begin(), f->thread_cpu_us_per_round_trip.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
}

// Process-wide CPU time and context switches, for the per-round-trip figures.
struct Usage {
  double cpu_us = 0;
  double switches = 0;
  static Usage now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return of(u);
  }
  static Usage of(const rusage& u) {
    auto us = [](const timeval& t) { return t.tv_sec * 1e6 + t.tv_usec; };
    return Usage{us(u.ru_utime) + us(u.ru_stime), static_cast<double>(u.ru_nvcsw + u.ru_nivcsw)};
  }
  Usage& operator+=(const Usage& other) {
    cpu_us += other.cpu_us;
    switches += other.switches;
    return *this;
  }
  void set_per_round_trip(const Usage& before, int round_trips, Figures* f) const {
    f->cpu_us_per_round_trip = (cpu_us - before.cpu_us) / round_trips;
    f->switches_per_round_trip = (switches - before.switches) / round_trips;
  }
};

// The worker side of a peer in a child process (--worker process): this executable again, run
// as `transport_bench --serve-worker PEER ENDPOINT SIZE ACK WINDOW MALLOC`, with its own ZeroMQ
// context, as a learner and a worker run in a cluster. It echoes on its main thread and answers the
// parent on two pipes (its descriptors 3 and 4) from a second thread: 'u' asks for its getrusage()
// (the per-round-trip figures then cover both processes), 'q' or end of file stops it.
constexpr int kControlIn = 3, kControlOut = 4;

class ChildWorker {
 public:
  static ChildWorker start(std::vector<std::string> args) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) {
      std::perror("transport bench: pipe");
      std::exit(1);
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("transport bench: fork");
      std::exit(1);
    }
    if (pid == 0) {
      dup2(to_child[0], kControlIn);
      dup2(from_child[1], kControlOut);
      args.insert(args.begin(), {"transport_bench", "--serve-worker"});
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    return ChildWorker(pid, to_child[1], from_child[0]);
  }
  ChildWorker(ChildWorker&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        to_child_(std::exchange(other.to_child_, -1)),
        from_child_(std::exchange(other.from_child_, -1)) {}
  ~ChildWorker() { stop(); }
  pid_t pid() const { return pid_; }

  rusage usage() const {
    rusage u{};
    const char command = 'u';
    if (write(to_child_, &command, 1) != 1 ||
        read(from_child_, &u, sizeof(u)) != static_cast<ssize_t>(sizeof(u))) {
      std::cerr << "transport bench: the worker process stopped answering\n";
      std::exit(1);
    }
    return u;
  }
  void stop() {
    if (pid_ <= 0) return;
    const char command = 'q';
    (void)!write(to_child_, &command, 1);
    waitpid(pid_, nullptr, 0);
    close(to_child_);
    close(from_child_);
    pid_ = -1;
  }

 private:
  ChildWorker(pid_t pid, int to_child, int from_child)
      : pid_(pid), to_child_(to_child), from_child_(from_child) {}
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
};

// In the child: answers the parent's usage requests until told to stop, then sets `stop`.
void serve_control(std::atomic<bool>& stop) {
  char command = 'q';
  while (read(kControlIn, &command, 1) == 1 && command == 'u') {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    if (write(kControlOut, &u, sizeof(u)) != static_cast<ssize_t>(sizeof(u))) break;
  }
  stop = true;
}

// Where a peer's worker side runs: a thread of this process running `body(stop)`, or the child
// started with `child_args`. usage() covers this process and the child, if any.
class WorkerSide {
 public:
  template <typename Body>
  WorkerSide(bool in_child, const std::vector<std::string>& child_args, Body body) {
    if (in_child) {
      child_.emplace(ChildWorker::start(child_args));
    } else {
      thread_ = std::thread([this, body]() mutable {
        set_current_thread_name("bench/echo");
        body(stop_);
      });
    }
  }
  ~WorkerSide() { stop(); }
  Usage usage() const {
    Usage u = Usage::now();
    if (child_) u += Usage::of(child_->usage());
    return u;
  }
  // This process, and the child when there is one.
  std::vector<pid_t> pids() const {
    std::vector<pid_t> out = {getpid()};
    if (child_) out.push_back(child_->pid());
    return out;
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (child_) child_->stop();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::optional<ChildWorker> child_;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t i = std::min(values.size() - 1, static_cast<std::size_t>(p * values.size()));
  return values[i];
}

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// The bare worker side: a DEALER that says hello, then echoes every message back until `stop`.
void bare_echo(zmq::context_t& context, const std::string& endpoint, std::atomic<bool>& stop) {
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 100);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  dealer.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  while (!stop) {
    zmq::message_t message;
    if (!dealer.recv(message)) continue;
    dealer.send(message, zmq::send_flags::none);
  }
}

// The arguments after --serve-worker (see ChildWorker) for `peer`'s worker side.
std::vector<std::string> child_args(const Flags& flags, const char* peer,
                                    const std::string& endpoint, std::size_t size,
                                    const CurveOptions& worker_keys = {}) {
  return {peer,
          endpoint,
          std::to_string(size),
          flags.fused_ack ? "fused" : "separate",
          std::to_string(flags.window),
          flags.tune_malloc ? "tuned" : "default",
          std::to_string(flags.spin_us),
          worker_keys.on() ? worker_keys.server_key : "-",
          worker_keys.on() ? worker_keys.public_key : "-",
          worker_keys.on() ? worker_keys.secret_key : "-"};
}

// ---- bare ZeroMQ: ROUTER sends [id, payload], DEALER echoes the payload back. With
// `own_contexts` each side gets its own context (its own I/O thread), as two processes have: the
// target's reference (see print_ratios).
Figures bench_bare(std::size_t size, const Flags& flags, bool own_contexts) {
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  auto echo = [&endpoint, &context, own_contexts](std::atomic<bool>& stop) {
    std::optional<zmq::context_t> worker_context;
    if (own_contexts) worker_context.emplace(1);
    bare_echo(own_contexts ? *worker_context : context, endpoint, stop);
  };
  // A child process cannot share this process's context: it gets its own, as two processes do.
  WorkerSide worker(flags.worker_process && own_contexts, child_args(flags, "bare", endpoint, size),
                    echo);
  zmq::message_t id, hello;
  (void)router.recv(id);
  (void)router.recv(hello);
  const std::string payload(size, 'x');
  auto send = [&] {
    router.send(zmq::buffer(id.data(), id.size()), zmq::send_flags::sndmore);
    router.send(zmq::buffer(payload), zmq::send_flags::none);
  };
  auto receive = [&] {
    zmq::message_t from, body;
    (void)router.recv(from);
    (void)router.recv(body);
  };
  Figures f;
  std::vector<double> rtt;
  for (int i = 0; i < flags.latency_round_trips; ++i) {
    const auto start = Clock::now();
    send();
    receive();
    rtt.push_back(micros_since(start));
  }
  f.p50_us = percentile(rtt, 0.50);
  f.p99_us = percentile(rtt, 0.99);
  const Usage usage = worker.usage();
  const auto threads =
      flags.per_thread ? thread_cpu_ns(worker.pids()) : std::map<std::string, double>{};
  const auto start = Clock::now();
  for (int i = 0; i < flags.window; ++i) send();
  for (int i = 0; i < flags.round_trips; ++i) {
    receive();
    if (i + flags.window < flags.round_trips) send();
  }
  f.messages_per_s = flags.round_trips / (micros_since(start) / 1e6);
  worker.usage().set_per_round_trip(usage, flags.round_trips, &f);
  if (flags.per_thread)
    set_thread_figures(threads, thread_cpu_ns(worker.pids()), flags.round_trips, &f);
  worker.stop();
  return f;
}

// ---- dice transport: EvalRequest out, Verdict back.
// Room for the text and the envelope around it in the first segment, as a caller that knows its
// message sizes would ask for (Cap'n Proto's default is a zeroed 8 KiB, then a second segment).
unsigned first_segment_words(std::size_t text_bytes) {
  return static_cast<unsigned>(text_bytes / sizeof(capnp::word) + 64);
}

WorkItem make_item(std::uint64_t work_id, const std::string& prompt) {
  capnp::MallocMessageBuilder message(first_segment_words(prompt.size()));
  auto request = wire::init_envelope(message, "learner", "bench").getBody().initEvalRequest();
  request.setWorkId(work_id);
  // With its size: a std::string passed as is becomes Text through c_str(), and strlen reads it.
  request.getTask().setPrompt(capnp::Text::Reader(prompt.data(), prompt.size()));
  return WorkItem{work_id, wire::encode(message), std::nullopt};
}

void echo_worker(WorkerConnection& connection, std::size_t size, bool fused_ack,
                 std::atomic<bool>& stop) {
  const std::string excerpt(size, 'y');
  while (!stop) {
    auto received = connection.receive(milliseconds(100));
    if (!received.ok()) continue;
    auto body = received->root().getBody();
    if (body.which() != schema::Envelope::Body::EVAL_REQUEST) continue;
    const std::uint64_t work_id = body.getEvalRequest().getWorkId();
    capnp::MallocMessageBuilder message(first_segment_words(excerpt.size()));
    auto verdict = connection.init_envelope(message).getBody().initVerdict();
    verdict.setWorkId(work_id);
    verdict.setLogExcerpt(capnp::Text::Reader(excerpt.data(), excerpt.size()));
    if (fused_ack) {
      if (!connection.finish(work_id, message, milliseconds(10000)).ok()) return;
      continue;
    }
    if (!connection.send_result(wire::encode(message), milliseconds(10000)).ok()) return;
    if (!connection.finish(work_id).ok()) return;
  }
}

// The dice worker side: a WorkerConnection with `window` slots running echo_worker().
void dice_echo(const std::string& endpoint, int window, std::size_t size, bool fused_ack,
               int spin_us, const CurveOptions& keys, std::atomic<bool>& stop) {
  WorkerOptions worker_options;
  worker_options.poll_spin_us = spin_us;
  worker_options.learner_endpoint = endpoint;
  worker_options.worker_id = "bench/rollout/0";
  worker_options.curve = keys;
  worker_options.capacity = static_cast<std::uint32_t>(window);
  // The whole window may arrive before the echo thread takes any of it: an inbox smaller than the
  // window would refuse work (an Error back) instead of measuring round trips.
  worker_options.inbox_capacity =
      std::max(worker_options.inbox_capacity, static_cast<std::size_t>(window));
  auto worker = WorkerConnection::start(worker_options);
  if (!worker.ok()) {
    std::cerr << worker.status().to_string() << "\n";
    std::exit(1);
  }
  echo_worker(**worker, size, fused_ack, stop);
  (*worker)->close();
}

Figures bench_dice(std::size_t size, const Flags& flags, const BenchKeys& keys = {}) {
  DispatcherOptions dispatcher_options;
  dispatcher_options.queue_capacity = static_cast<std::size_t>(flags.window) * 4;
  dispatcher_options.poll_spin_us = flags.spin_us;
  dispatcher_options.curve = keys.learner;
  auto dispatcher = WorkDispatcher::start(dispatcher_options);
  if (!dispatcher.ok()) {
    std::cerr << dispatcher.status().to_string() << "\n";
    std::exit(1);
  }
  const std::string endpoint = (*dispatcher)->endpoint();
  WorkerSide worker(flags.worker_process, child_args(flags, "dice", endpoint, size, keys.worker),
                    [&](std::atomic<bool>& stop) {
                      dice_echo(endpoint, flags.window, size, flags.fused_ack, flags.spin_us,
                                keys.worker, stop);
                    });
  while ((*dispatcher)->stats().credits < static_cast<std::uint64_t>(flags.window)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  const std::string prompt(size, 'x');
  std::uint64_t next_id = 1;
  auto round_trip_ok = [&](const Result<WorkResult>& r) {
    if (r.ok()) return true;
    std::cerr << "transport bench: " << r.status().to_string() << "\n";
    std::exit(1);
  };
  Figures f;
  std::vector<double> rtt;
  for (int i = 0; i < flags.latency_round_trips; ++i) {
    const auto start = Clock::now();
    if (!(*dispatcher)->submit(make_item(next_id++, prompt), milliseconds(10000)).ok())
      std::exit(1);
    round_trip_ok((*dispatcher)->next_result(milliseconds(10000)));
    rtt.push_back(micros_since(start));
  }
  f.p50_us = percentile(rtt, 0.50);
  f.p99_us = percentile(rtt, 0.99);
  const Usage usage = worker.usage();
  const auto threads =
      flags.per_thread ? thread_cpu_ns(worker.pids()) : std::map<std::string, double>{};
  const auto start = Clock::now();
  for (int i = 0; i < flags.window; ++i) {
    if (!(*dispatcher)->submit(make_item(next_id++, prompt), milliseconds(10000)).ok())
      std::exit(1);
  }
  for (int i = 0; i < flags.round_trips; ++i) {
    round_trip_ok((*dispatcher)->next_result(milliseconds(10000)));
    if (i + flags.window < flags.round_trips) {
      if (!(*dispatcher)->submit(make_item(next_id++, prompt), milliseconds(10000)).ok()) {
        std::exit(1);
      }
    }
  }
  f.messages_per_s = flags.round_trips / (micros_since(start) / 1e6);
  worker.usage().set_per_round_trip(usage, flags.round_trips, &f);
  if (flags.per_thread)
    set_thread_figures(threads, thread_cpu_ns(worker.pids()), flags.round_trips, &f);
  worker.stop();
  (*dispatcher)->close();
  return f;
}

// Same-run ratios of dice to a bare peer, each oriented so that above 1 is dice slower, and
// whether all three are within the target (1.5x). The target is read against zmq_two_contexts: a
// learner and a worker are two processes, each with its own ZeroMQ I/O thread, which is the
// ping-pong's shape there (one I/O thread serving both ends needs both in one process).
void print_ratios(const char* peer, std::size_t size, const Figures& dice, const Figures& bare) {
  constexpr double kTarget = 1.5;
  const double throughput = bare.messages_per_s / dice.messages_per_s;
  const double p50 = dice.p50_us / bare.p50_us;
  const double p99 = dice.p99_us / bare.p99_us;
  const bool within = throughput <= kTarget && p50 <= kTarget && p99 <= kTarget;
  std::printf("  dice vs %-17s %6zu B: round trips/s %.2fx, p50 %.2fx, p99 %.2fx (%s 1.5x)\n", peer,
              size, throughput, p50, p99, within ? "within" : "NOT within");
}

bool parse(int argc, char** argv, Flags* flags) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--sizes") {
      flags->sizes.clear();
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ',')) flags->sizes.push_back(std::stoul(item));
    } else if (key == "--round-trips") {
      flags->round_trips = std::stoi(value);
    } else if (key == "--latency-round-trips") {
      flags->latency_round_trips = std::stoi(value);
    } else if (key == "--peers") {
      const bool bare = value.find("bare") != std::string::npos;
      flags->run_bare_shared = bare || value.find("shared") != std::string::npos;
      flags->run_bare_apart = bare || value.find("apart") != std::string::npos;
      flags->run_dice_curve = value.find("dice_curve") != std::string::npos;
      std::string without_curve = value;
      if (flags->run_dice_curve) without_curve.erase(value.find("dice_curve"), 10);
      flags->run_dice = without_curve.find("dice") != std::string::npos;
    } else if (key == "--malloc") {
      if (value != "tuned" && value != "default") return false;
      flags->tune_malloc = value == "tuned";
    } else if (key == "--ack") {
      if (value != "fused" && value != "separate") return false;
      flags->fused_ack = value == "fused";
    } else if (key == "--worker") {
      if (value != "thread" && value != "process") return false;
      flags->worker_process = value == "process";
    } else if (key == "--threads") {
      if (value != "on" && value != "off") return false;
      flags->per_thread = value == "on";
    } else if (key == "--spin") {
      flags->spin_us = value == "auto" ? kAutoSpin : std::stoi(value);
      if (flags->spin_us < kAutoSpin) return false;
    } else if (key == "--window") {
      flags->window = std::stoi(value);
    } else {
      return false;
    }
  }
  if (flags->latency_round_trips < 0) flags->latency_round_trips = flags->round_trips;
  return argc % 2 == 1 && flags->round_trips > 0 && flags->window > 0 && !flags->sizes.empty();
}

}  // namespace

// The child side of --worker process:
// `--serve-worker PEER ENDPOINT SIZE ACK WINDOW MALLOC SPIN_US SERVER_KEY PUBLIC_KEY SECRET_KEY`
// (keys "-" without CURVE).
int serve_worker(const std::vector<std::string>& args) {
  if (args.size() != 10) return 2;
  if (args[5] == "tuned") (void)tune_allocator_for_messages();
  set_current_thread_name("bench/echo");
  std::atomic<bool> stop{false};
  std::thread control([&] { serve_control(stop); });
  if (args[0] == "bare") {
    zmq::context_t context(1);
    bare_echo(context, args[1], stop);
  } else {
    CurveOptions keys;
    if (args[9] != "-") keys = CurveOptions{args[8], args[9], args[7], {}};
    dice_echo(args[1], std::stoi(args[4]), std::stoul(args[2]), args[3] == "fused",
              std::stoi(args[6]), keys, stop);
  }
  control.join();
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--serve-worker") {
    return serve_worker(std::vector<std::string>(argv + 2, argv + argc));
  }
  Flags flags;
  if (!parse(argc, argv, &flags)) {
    std::cerr
        << "usage: transport_bench [--sizes 1024,65536] [--round-trips 2000] [--window 16] "
           "[--peers bare,dice,dice_curve] [--latency-round-trips N] [--malloc tuned|default] "
           "[--ack fused|separate] [--worker thread|process] [--threads on|off] "
           "[--spin auto|MICROSECONDS]\n";
    return 2;
  }
  dice::LogOptions log;
  log.level = dice::LogLevel::kWarn;
  log.component = "transport_bench";
  dice::log_configure(log);
  set_current_thread_name("bench/learner");
  if (flags.tune_malloc && !tune_allocator_for_messages()) {
    std::cerr << "transport bench: could not tune malloc\n";
  }
  std::printf(
      "%-17s %9s %14s %9s %9s %10s %9s   (round trips: %d, window: %d, malloc: %s, ack: %s, "
      "worker: %s, dice spin: %d us, %u hw threads)\n",
      "transport", "payload_B", "round_trips/s", "p50_us", "p99_us", "cpu_us/rt", "cs/rt",
      flags.round_trips, flags.window, flags.tune_malloc ? "tuned" : "default",
      flags.fused_ack ? "fused" : "separate", flags.worker_process ? "process" : "thread",
      resolve_spin_us(flags.spin_us), std::thread::hardware_concurrency());
  auto print = [](const char* name, std::size_t size, const Figures& f) {
    std::printf("%-17s %9zu %14.0f %9.1f %9.1f %10.2f %9.2f\n", name, size, f.messages_per_s,
                f.p50_us, f.p99_us, f.cpu_us_per_round_trip, f.switches_per_round_trip);
    for (const auto& [thread, us] : f.thread_cpu_us_per_round_trip) {
      std::printf("    %-40s %8.2f cpu_us/rt\n", thread.c_str(), us);
    }
  };
  for (std::size_t size : flags.sizes) {
    std::optional<Figures> shared, apart, dice_figures, curve_figures;
    if (flags.run_bare_shared) {
      shared = bench_bare(size, flags, /*own_contexts=*/false);
      print("zmq_router_dealer", size, *shared);
    }
    if (flags.run_bare_apart) {
      apart = bench_bare(size, flags, /*own_contexts=*/true);
      print("zmq_two_contexts", size, *apart);
    }
    if (flags.run_dice) {
      dice_figures = bench_dice(size, flags);
      print("dice_transport", size, *dice_figures);
    }
    if (flags.run_dice_curve) {
      curve_figures = bench_dice(size, flags, make_bench_keys());
      print("dice_curve", size, *curve_figures);
    }
    if (dice_figures && curve_figures) {
      std::printf("  curve/plain at %zu B: round trips/s %.2fx, p50 %.2fx, cpu/rt %.2fx\n", size,
                  curve_figures->messages_per_s / dice_figures->messages_per_s,
                  curve_figures->p50_us / dice_figures->p50_us,
                  curve_figures->cpu_us_per_round_trip / dice_figures->cpu_us_per_round_trip);
    }
    if (dice_figures && apart) print_ratios("zmq_two_contexts", size, *dice_figures, *apart);
    if (dice_figures && shared) print_ratios("zmq_router_dealer", size, *dice_figures, *shared);
  }
  return 0;
}
