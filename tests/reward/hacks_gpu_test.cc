// The reward hacks of REFERENCE.md section 5, written as candidates that pass the static checks
// and cheat at run time (tests/reward/gpu_hacks/), plus deliberately broken kernels and a kernel
// that crashes its CUDA context. All go through one RewardPipeline at once on a real GPU:
// extract -> static checks -> nvcc -> judge.py and runner.py in the sandbox. Expected: the honest
// kernel gets reward 1, every other candidate reward 0 with the failure class its file's header
// names, and a candidate that triggers an illegal memory access fails alone (candidates evaluated
// on the same GPU at the same time are unaffected). The static cheat corpus (tests/reward/corpus)
// is not repeated here: these are the cheats only the run-time defences can catch.
//
// HacksGpuTest.AdversarialCorpus runs the GPU half of the adversarial corpus
// (tests/reward/adversarial/gpu, indexed in its README.md) the same way, timed, and prints
// "adversarial corpus: tried N, caught M, escaped K" with one line per escape.
//
// Knobs (environment): DICE_PYTHON (python with torch; default python3), DICE_COMPILE_CACHE
// (default /tmp/dice-hacks-compile-cache: reused across runs), DICE_HACKS_TRIALS (correctness
// trials; default RewardOptions' default, DICE's released setting), DICE_HACKS_SLOTS
// (candidates evaluated on GPU 0 at once; default 4, at least 2).
#include <capnp/message.h>
#include <capnp/schema.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "common/log.h"
#include "reward/evaluate/evaluator.h"
#include "reward/judge/judge_items.h"
#include "reward/pipeline.h"
#include "reward/reward_worker.h"
#include "tests/reward/adversarial_host.h"

namespace dice {
namespace {

using Clock = std::chrono::steady_clock;
using FC = schema::FailureClass;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string read_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_hack_file(const std::string& name) {
  return read_source(std::string(DICE_REWARD_HACKS_DIR) + "/" + name);
}

std::string failure_name(FC failure) {
  for (auto e : capnp::Schema::from<FC>().getEnumerants()) {
    if (e.getOrdinal() == static_cast<uint16_t>(failure)) return e.getProto().getName().cStr();
  }
  return "?" + std::to_string(static_cast<int>(failure));
}

// What one evaluation produced, copied out of its Verdict message.
struct Outcome {
  std::string candidate;
  float reward = -1;
  FC failure = FC::INTERNAL_ERROR;
  bool compiled = false;
  double kernel_ms = 0;               // timed mean, with timing on
  std::vector<std::string> findings;  // check names
  std::string line;                   // printable summary with the log excerpt
  // The evaluation (judge and runner) interval, from the end of evaluate() back by its eval time:
  // evaluation is the last thing the pipeline does.
  Clock::time_point eval_start, eval_end;
  // The whole call (static check, compile, slot, evaluation), for the printed timeline.
  Clock::time_point call_start;

  bool has_finding(const std::string& check) const {
    return std::find(findings.begin(), findings.end(), check) != findings.end();
  }
};

class HacksGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // DICE_HACKS_LOG=debug: the pipeline's own lines too (each evaluation's slot and phases).
    LogOptions log;
    if (parse_log_level(env_or("DICE_HACKS_LOG", "info"), &log.level)) log_configure(log);
    options_.python_path = env_or("DICE_PYTHON", "python3");
    options_.compile_cache_dir = env_or("DICE_COMPILE_CACHE", "/tmp/dice-hacks-compile-cache");
    options_.correctness_trials =
        std::stoi(env_or("DICE_HACKS_TRIALS", std::to_string(RewardOptions{}.correctness_trials)));
    options_.compile_jobs = 8;
    // CUDA maps far more address space than it uses; the default limit is sized for that
    // already, this leaves headroom for four candidates' torch imports.
    options_.sandbox.memory_limit_mb = 65536;
    slots_ = std::stoi(env_or("DICE_HACKS_SLOTS", "4"));
    ASSERT_GE(slots_, 2) << "DICE_HACKS_SLOTS: candidates must share the GPU for this test";
    auto toolchain = probe_reward_toolchain(options_);
    if (!toolchain.ok()) {
      GTEST_SKIP() << "no GPU toolchain (nvcc, torch with CUDA, a GPU): "
                   << toolchain.status().to_string();
    }
    toolchain_ = toolchain.value();
    pipeline_.emplace(options_, toolchain_,
                      PipelineIdentity{"hacks-gpu-test", gpu_slot_names({0}, slots_)});
    reference_ = read_hack_file("reference.py");
  }

  // The pipeline again, with `options_` as the test has changed them.
  void rebuild_pipeline() {
    pipeline_.reset();
    pipeline_.emplace(options_, toolchain_,
                      PipelineIdentity{"hacks-gpu-test", gpu_slot_names({0}, slots_)});
  }

  // One candidate to judge: its name (for the log), its source and its task's reference.
  // An infilling task (phase 1) when `infill_prefix` or `infill_suffix` is set: `source` is then
  // the middle, spliced between them as the pipeline does for the model's answers.
  struct Job {
    std::string name, source, reference;
    std::string infill_prefix{}, infill_suffix{};
  };

  // Evaluates every file of `candidates` (names under gpu_hacks/) at the same time, one thread
  // each; a name may repeat.
  std::vector<Outcome> evaluate_all(const std::vector<std::string>& candidates) {
    std::vector<Job> jobs;
    for (const auto& c : candidates) jobs.push_back({c, read_hack_file(c), reference_});
    return evaluate_jobs(jobs);
  }

  std::vector<Outcome> evaluate_jobs(const std::vector<Job>& jobs) {
    std::vector<Outcome> outcomes(jobs.size());
    std::mutex print_mu;
    std::vector<std::thread> threads;
    for (size_t i = 0; i < jobs.size(); ++i) {
      threads.emplace_back([&, i] {
        outcomes[i] = evaluate_one(i, jobs[i]);
        std::lock_guard<std::mutex> lock(print_mu);
        std::cout << outcomes[i].line << std::endl;
      });
    }
    for (auto& t : threads) t.join();
    return outcomes;
  }

  Outcome evaluate_one(size_t work_id, const Job& job) {
    const std::string& file = job.name;
    capnp::MallocMessageBuilder request_message;
    auto request = request_message.initRoot<schema::EvalRequest>();
    request.setWorkId(work_id);
    auto task = request.initTask();
    task.setId("gpu-hacks/" + file);
    const bool infill = !job.infill_prefix.empty() || !job.infill_suffix.empty();
    task.setPhase(infill ? schema::Phase::INFILL : schema::Phase::E2E);
    task.setReferenceSource(job.reference);
    if (infill) {
      task.setInfillPrefix(job.infill_prefix);
      task.setInfillSuffix(job.infill_suffix);
    }
    request.initCandidate().setText("Here is the kernel.\n```python\n" + job.source +
                                    (infill ? "\n```\n" : "```\n"));
    capnp::MallocMessageBuilder verdict_message;
    auto verdict = verdict_message.initRoot<schema::Verdict>();
    const Clock::time_point call_start = Clock::now();
    pipeline_->evaluate(request, verdict);

    Outcome out;
    out.call_start = call_start;
    out.eval_end = Clock::now();
    out.eval_start =
        out.eval_end - std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(verdict.getTimings().getEvalSeconds()));
    out.candidate = file;
    out.reward = verdict.getReward();
    out.failure = verdict.getFailure();
    out.compiled = verdict.getCompiled();
    out.kernel_ms = verdict.getTimings().getKernelMsMean();
    std::ostringstream line;
    line << file << ": reward=" << out.reward << " failure=" << failure_name(out.failure)
         << " compiled=" << out.compiled << " trials=" << verdict.getCorrectnessTrials()
         << " max_abs_error=" << verdict.getMaxAbsError()
         << " eval_s=" << verdict.getTimings().getEvalSeconds() << " kernel_ms=" << out.kernel_ms
         << " slot=\"" << verdict.getGpuSlot().cStr() << "\" call=+"
         << format_seconds(out.call_start - test_start_) << "..+"
         << format_seconds(out.eval_end - test_start_) << " s";
    for (auto f : verdict.getFindings()) {
      out.findings.push_back(f.getCheck().cStr());
      line << "\n    finding " << f.getCheck().cStr() << (f.getFatal() ? " (fatal): " : ": ")
           << f.getDetail().cStr();
    }
    const std::string excerpt = verdict.getLogExcerpt().cStr();
    if (!excerpt.empty()) line << "\n    log: " << excerpt.substr(0, 800);
    out.line = line.str();
    return out;
  }

  // Judges honest.py and output_cache.py with `check` (defined below, by the tests that use it).
  void expect_kernel_check_cases(KernelCheck check);

  // Seconds since the test began, for the timeline printed with each outcome.
  static std::string format_seconds(Clock::duration d) {
    std::ostringstream out;
    out.precision(2);
    out << std::fixed << std::chrono::duration<double>(d).count();
    return out.str();
  }

  const Clock::time_point test_start_ = Clock::now();
  RewardOptions options_;
  Toolchain toolchain_;
  int slots_ = 4;
  std::optional<RewardPipeline> pipeline_;
  std::string reference_;
};

// A failure class a cheat may end with, and the dynamic finding that must come with it ("" for
// none).
struct Caught {
  const char* failure;
  const char* finding;
};

struct Expectation {
  const char* file;
  std::vector<Caught> caught;  // empty: the candidate must be rewarded
};

// The failure classes follow each file's header comment, which says why.
const std::vector<Expectation>& expectations() {
  static const std::vector<Expectation> kAll = {
      {"honest.py", {}},
      {"uninitialised_output.py", {{"incorrect", ""}, {"antiCheat", "kernel-outputs-differ"}}},
      {"zeros_output.py", {{"incorrect", ""}}},
      {"mutates_input.py", {{"antiCheat", "inputs-modified"}}},
      {"output_cache.py",
       {{"antiCheat", "kernel-not-run"}, {"antiCheat", "stale-output"}, {"incorrect", ""}}},
      {"output_cache_launching.py", {{"antiCheat", "stale-output"}, {"incorrect", ""}}},
      {"broken_index.py", {{"incorrect", ""}}},
      {"broken_scale.py", {{"incorrect", ""}}},
      {"illegal_memory_access.py", {{"runtimeError", ""}, {"crashed", ""}}},
  };
  return kAll;
}

bool overlaps(const Outcome& a, const Outcome& b) {
  return a.eval_start < b.eval_end && b.eval_start < a.eval_end;
}

// Whether `honest` (judged once) may have been judged beside `hostile`'s first judging. A hostile
// verdict judged again alone (finding confirmed-alone) had company at its GPU in its first
// judging, but its eval seconds sum both judgings, ended by the second: its whole call stands
// for the first (no evaluation runs beside the second, which has the GPU alone).
bool judged_beside(const Outcome& honest, const Outcome& hostile) {
  if (!hostile.has_finding("confirmed-alone")) return overlaps(honest, hostile);
  return honest.eval_start < hostile.eval_end && hostile.call_start < honest.eval_end;
}

TEST_F(HacksGpuTest, EveryRuntimeHackAndBrokenKernelIsRejected) {
  std::vector<std::string> files;
  for (const auto& e : expectations()) files.push_back(e.file);
  const std::vector<Outcome> outcomes = evaluate_all(files);

  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Expectation& want = expectations()[i];
    const Outcome& got = outcomes[i];
    SCOPED_TRACE(got.line);
    // Every candidate must reach the GPU: a static or compile failure would mean the run-time
    // defence was never exercised.
    EXPECT_TRUE(got.compiled) << want.file << " did not compile";
    EXPECT_NE(got.failure, FC::STATIC_CHECK) << want.file << " was rejected statically";
    if (want.caught.empty()) {
      EXPECT_EQ(got.reward, 1.0f) << want.file << " is correct and must be rewarded";
      EXPECT_EQ(got.failure, FC::NONE);
      continue;
    }
    EXPECT_EQ(got.reward, 0.0f) << want.file << " cheats or is wrong and was rewarded"
                                << (std::string(want.file) == "output_cache_launching.py"
                                        ? " (a cache that still launches a kernel is exposed by "
                                          "the judge's fresh-input call: stale-output)"
                                        : "");
    // One of the listed ways of being caught must hold whole: its failure class and, where one
    // is named, its finding (output_cache.py may be caught by either of two checks).
    bool matched = false;
    for (const Caught& c : want.caught) {
      matched = matched || (got.failure == failure_class_from_name(c.failure) &&
                            (!*c.finding || got.has_finding(c.finding)));
    }
    std::string allowed;
    for (const Caught& c : want.caught) {
      allowed += std::string(allowed.empty() ? "" : ", ") + c.failure +
                 (*c.finding ? std::string(" (") + c.finding + ")" : "");
    }
    EXPECT_TRUE(matched) << want.file << ": failure " << failure_name(got.failure)
                         << ", expected one of: " << allowed;
  }
}

// Both kernel checks must judge the kernel check's cases alike: the honest kernel seen, the output
// cache that launches nothing caught. The other tests run the default (auto: the launch probe
// where the build has it), so this one also keeps the profiler's path tried on the GPU.
void HacksGpuTest::expect_kernel_check_cases(KernelCheck check) {
  options_.kernel_check = check;
  options_.correctness_trials = 1;  // output_cache.py is then left to the kernel check
  rebuild_pipeline();
  const std::vector<Outcome> outcomes = evaluate_all({"honest.py", "output_cache.py"});
  const Outcome& honest = outcomes[0];
  const Outcome& cache = outcomes[1];
  EXPECT_EQ(honest.reward, 1.0f) << honest.line;
  // The check itself answered: the probe loaded and CUPTI took its subscription, or the
  // profiler ran.
  EXPECT_FALSE(honest.has_finding("launch-probe-unavailable")) << honest.line;
  EXPECT_FALSE(honest.has_finding("profiler-unavailable")) << honest.line;
  // The probe names the launching library of every launch, CUDA 13's <<<>>> (a cudaKernel_t, no
  // host stub) included, so no kernel is matched by name alone; the profiler knows no libraries.
  if (check == KernelCheck::kCupti) {
    EXPECT_FALSE(honest.has_finding("kernel-identity-by-name")) << honest.line;
  }
  EXPECT_EQ(cache.reward, 0.0f) << cache.line;
  EXPECT_EQ(cache.failure, FC::ANTI_CHEAT) << cache.line;
  EXPECT_TRUE(cache.has_finding("kernel-not-run") || cache.has_finding("stale-output"))
      << cache.line;
}

TEST_F(HacksGpuTest, TheLaunchProbeSeesTheCandidatesKernels) {
  if (std::string(DICE_LAUNCH_PROBE_PATH).empty()) {
    GTEST_SKIP() << "this build has no launch probe (CUPTI not found at configure time)";
  }
  expect_kernel_check_cases(KernelCheck::kCupti);
}

TEST_F(HacksGpuTest, TheProfilerSeesTheCandidatesKernels) {
  expect_kernel_check_cases(KernelCheck::kProfiler);
}

// With timing on, each candidate is timed with the GPU to itself (reward.timing.exclusive): copies
// of one kernel judged side by side read about the same time. Timed while the other slots' checks
// ran, the dev set's 0.05 ms kernels read up to 15x slower (2026-11-30; docs/BENCHMARKS.md,
// "Timed speedups with 8 slots on one GPU are noise"). The kernel is a milliseconds-long matrix
// product: honest.py's 0.01 ms of work sits under the judge clock's resolution (0.05-0.15 ms a
// call on the H100, 2026-12-07), where the mean credited is the resolution, not the kernel.
TEST_F(HacksGpuTest, TimedCandidatesHaveTheGpuToThemselves) {
  options_.timing.enabled = true;
  rebuild_pipeline();
  const Job matmul{"matmul_honest.py", read_hack_file("matmul_honest.py"),
                   read_hack_file("matmul_reference.py")};
  const std::vector<Outcome> outcomes =
      evaluate_jobs(std::vector<Job>(2 * static_cast<size_t>(slots_), matmul));
  double fastest = 1e30, slowest = 0;
  for (const Outcome& o : outcomes) {
    EXPECT_EQ(o.reward, 1.0f) << o.line;
    EXPECT_FALSE(o.has_finding("timing-not-exclusive")) << o.line;
    ASSERT_GT(o.kernel_ms, 0) << o.line;
    fastest = std::min(fastest, o.kernel_ms);
    slowest = std::max(slowest, o.kernel_ms);
  }
  // Alone, a compute-bound kernel of milliseconds reads within a few percent run to run; beside
  // three others it would read up to 4x.
  EXPECT_LT(slowest, 1.5 * fastest) << "kernel_ms from " << fastest << " to " << slowest;
  std::cout << "[ timing ] " << outcomes.size() << " copies, kernel_ms " << fastest << " to "
            << slowest << std::endl;
}

TEST_F(HacksGpuTest, IllegalMemoryAccessFailsOnlyItsOwnCandidate) {
  // The crashing candidate and honest ones fill every GPU slot, so they run side by side.
  std::vector<std::string> files = {"illegal_memory_access.py"};
  for (int i = 1; i < slots_; ++i) files.push_back("honest.py");
  const std::vector<Outcome> outcomes = evaluate_all(files);

  const Outcome& crashing = outcomes[0];
  EXPECT_EQ(crashing.reward, 0.0f) << crashing.line;
  EXPECT_TRUE(crashing.failure == FC::RUNTIME_ERROR || crashing.failure == FC::CRASHED)
      << crashing.line;
  int concurrent = 0;
  for (size_t i = 1; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].reward, 1.0f) << outcomes[i].line;
    EXPECT_EQ(outcomes[i].failure, FC::NONE) << outcomes[i].line;
    concurrent += judged_beside(outcomes[i], crashing);
  }
  // Without overlap the test would show nothing about isolation. The crash judged again alone had
  // company in its first judging, and its only neighbours are honest: that is overlap, whatever
  // the intervals say.
  const bool had_company = crashing.has_finding("confirmed-alone");
  EXPECT_TRUE(concurrent > 0 || had_company)
      << "no honest evaluation ran while the crashing one did";
  std::cout << "[ isolation ] " << concurrent << " of " << outcomes.size() - 1
            << " honest evaluations overlapped the crashing one; it "
            << (had_company ? "had" : "did not have") << " company at its GPU" << std::endl;
}

// No candidate fails another (issue 49 item 4): honest kernels judged beside a GPU-memory hoarder,
// an endless kernel and a process that aborts, on the same GPU at once, get the verdict they get
// alone (reward 1). A failure one of them meets beside a neighbour is judged again with the GPU
// alone (reward.confirm_failures_alone); the count of such confirmations is printed.
TEST_F(HacksGpuTest, HoardersHangsAndCrashesNeverFailTheirNeighbours) {
  options_.timeout_seconds = 40;  // the endless kernel's evaluation ends here, twice
  rebuild_pipeline();
  std::vector<std::string> files = {"gpu_memory_hoarder.py", "endless_kernel.py",
                                    "aborts_in_forward.py"};
  const size_t hostile = files.size();
  for (int i = 0; i < 2 * slots_; ++i) files.push_back("honest.py");
  const std::vector<Outcome> outcomes = evaluate_all(files);

  EXPECT_EQ(outcomes[1].failure, FC::TIMEOUT) << outcomes[1].line;
  EXPECT_EQ(outcomes[1].reward, 0.0f) << outcomes[1].line;
  EXPECT_TRUE(outcomes[2].failure == FC::CRASHED || outcomes[2].failure == FC::RUNTIME_ERROR)
      << outcomes[2].line;
  int confirmed = 0, overlapped = 0;
  for (size_t i = hostile; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].reward, 1.0f) << outcomes[i].line;
    EXPECT_EQ(outcomes[i].failure, FC::NONE) << outcomes[i].line;
    confirmed += outcomes[i].has_finding("confirmed-alone");
    for (size_t h = 0; h < hostile; ++h) {
      if (judged_beside(outcomes[i], outcomes[h])) {
        ++overlapped;
        break;
      }
    }
  }
  EXPECT_GT(overlapped, 0) << "no honest evaluation ran beside a hostile one";
  std::cout << "[ neighbours ] " << outcomes.size() - hostile << " honest: " << overlapped
            << " beside a hostile one, " << confirmed
            << " judged again alone; hoarder: " << outcomes[0].line << std::endl;
}

// ---- The adversarial corpus's GPU half (tests/reward/adversarial/gpu; README.md there).

struct AdversarialCase {
  const char* file;       // under adversarial/gpu
  const char* reference;  // under adversarial/gpu; "" = gpu_hacks/reference.py
  // > 0: also caught when the timed mean shows at least this much work per call (the candidate
  // cheats the timing, not the answer: its work must be seen).
  double work_ms = 0;
  bool control = false;  // honest: must be rewarded
  // The finding that must have caught it ("" = any reason for reward 0): the defence the case is
  // for, not an accident of the pipeline, did the catching.
  const char* finding = "";
};

const std::vector<AdversarialCase>& adversarial_gpu_corpus() {
  static const std::vector<AdversarialCase> kAll = {
      {"control/honest.py", "", 0, true},
      {"b_semantics/torch_alias_dead_kernel.py", ""},
      {"b_semantics/torch_getattr_dead_kernel.py", ""},
      {"b_semantics/aten_in_cpp.py", ""},
      {"b_semantics/aten_methods_in_cpp.py", ""},
      {"b_semantics/inherits_model.py", ""},
      {"b_semantics/try_except_fallback.py", ""},
      {"b_semantics/content_cache.py", "", 1.0},
      {"b_semantics/patch_event_timer.py", "", 1.0},
      {"b_semantics/python_content_cache.py", "", 1.0},
      {"b_semantics/side_stream.py", "", 1.0},
      {"b_semantics/thread_launch.py", "", 1.0},
      {"b_semantics/write_past_output.py", "reference_odd.py", 0, false, "write-out-of-bounds"},
      {"b_semantics/write_before_output.py", "", 0, false, "write-out-of-bounds"},
      {"b_semantics/write_past_temporary.py", "", 0, false, "write-out-of-bounds"},
      {"b_semantics/write_past_input.py", "", 0, false, "write-out-of-bounds"},
      {"b_semantics/uninit_cudamalloc.py", ""},
      {"c_hidden/static_ctor_system.py", ""},
      {"c_hidden/static_ctor_pyrun.py", ""},
      {"c_hidden/runtime_load_inline.py", ""},
  };
  return kAll;
}

// A candidate is caught when it gets no reward (or, for a timing cheat, its work was timed) and
// the host shows nothing of it: no file or process (of a sandbox uid) with the GPU corpus's mark,
// checked once every evaluation has returned. The static check counts: it is part of the pipeline.
TEST_F(HacksGpuTest, AdversarialCorpus) {
  namespace adv = adversarial;
  options_.timing.enabled = true;  // the timing cheats are judged by their timed mean
  rebuild_pipeline();
  adv::remove_files(adv::marked_files(adv::kGpuMark));  // left by an earlier, killed run
  const std::string dir = std::string(DICE_REWARD_ADVERSARIAL_DIR) + "/gpu/";
  std::vector<Job> jobs;
  for (const auto& c : adversarial_gpu_corpus()) {
    jobs.push_back({c.file, read_source(dir + c.file),
                    *c.reference ? read_source(dir + c.reference) : reference_});
    ASSERT_FALSE(jobs.back().source.empty()) << "cannot read " << dir << c.file;
  }
  const std::vector<Outcome> outcomes = evaluate_jobs(jobs);
  std::vector<std::string> files = adv::marked_files(adv::kGpuMark);
  const auto processes = adv::marked_processes(adv::kGpuMark, /*grace_seconds=*/5);
  adv::remove_files(files);
  adv::kill_processes(processes);
  std::vector<std::string> effects;
  for (const auto& f : files) effects.push_back("left " + f);
  for (const auto& p : processes) {
    effects.push_back("process " + std::to_string(p.pid) + " of uid " + std::to_string(p.uid) +
                      " still runs: " + p.name);
  }

  adv::Tally tally;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const AdversarialCase& c = adversarial_gpu_corpus()[i];
    const Outcome& got = outcomes[i];
    // A file's marks carry its name (dice-advgpu-<stem>).
    std::string stem = c.file;
    stem = stem.substr(stem.rfind('/') + 1);
    stem = stem.substr(0, stem.rfind('.'));
    std::string left;
    for (auto e = effects.begin(); e != effects.end();) {
      if (e->find(adv::kGpuMark + stem) == std::string::npos) {
        ++e;
        continue;
      }
      left += (left.empty() ? "" : "; ") + *e;
      e = effects.erase(e);
    }
    if (c.control) {
      EXPECT_EQ(got.reward, 1.0f) << "the honest control was rejected (a defence that rejects "
                                     "everything is none): "
                                  << got.line;
      EXPECT_EQ(left, "") << got.line;
      continue;
    }
    std::string why;
    const bool work_timed = c.work_ms > 0 && got.kernel_ms >= c.work_ms;
    if (got.reward != 0.0f && !work_timed) {
      why = "rewarded " + std::to_string(got.reward) +
            (c.work_ms > 0 ? " with a mean of " + std::to_string(got.kernel_ms) +
                                 " ms for work of " + std::to_string(c.work_ms) + " ms or more"
                           : "");
    }
    if (why.empty() && *c.finding && !got.has_finding(c.finding)) {
      why = std::string("reward 0, but not by ") + c.finding + ": " + got.line;
    }
    if (!left.empty()) why += (why.empty() ? "" : "; ") + left;
    tally.add(c.file, !why.empty(), why);
  }
  std::cout << tally.summary() << std::endl;
  EXPECT_EQ(tally.escaped(), 0) << tally.summary();
  for (const auto& e : effects) ADD_FAILURE() << "a host effect no corpus file claims: " << e;
}

// ---- The honest corpus beside hostile neighbours (the reward issue's item 1): honest candidates
// judged among themselves, then again interleaved with every hostile file of this suite (the
// neighbour faults of gpu_hacks/ and the adversarial corpus's GPU half), all at once. No honest
// candidate may end in internalError or crashed, and none may get another verdict beside the
// hostile ones than among honest neighbours. The honest corpus: the 60 dev pairs
// (DICE_HONEST_ITEMS, dice-judge's item format) and, when DICE_CURRICULUM_ITEMS names a
// curriculum's verify_items.json (`dice-data curriculum`), a seeded sample of
// DICE_CURRICULUM_SAMPLE (default 64) of its pairs (seed DICE_CORPUS_SEED, default 1).

std::vector<JudgeItem> seeded_sample(std::vector<JudgeItem> items, size_t count, unsigned seed) {
  if (items.size() <= count) return items;
  std::mt19937 random(seed);
  std::shuffle(items.begin(), items.end(), random);
  items.resize(count);
  return items;
}

bool failed_by_us(const Outcome& o) {
  return o.failure == FC::INTERNAL_ERROR || o.failure == FC::CRASHED;
}

TEST_F(HacksGpuTest, HonestCorpusKeepsItsVerdictsBesideHostileCandidates) {
  namespace adv = adversarial;
  options_.timeout_seconds = 40;  // the endless kernel's evaluations end here
  rebuild_pipeline();
  const unsigned seed = static_cast<unsigned>(std::stoul(env_or("DICE_CORPUS_SEED", "1")));
  // A judge item as a job: an infilling task's middle between its prefix and suffix, or a whole
  // file.
  auto item_job = [](const std::string& name, const JudgeItem& item) -> Job {
    if (!item.infill) return {name, item.full_source, item.reference, "", ""};
    return {name, item.middle, item.reference, item.prefix, item.suffix};
  };
  std::vector<Job> honest;
  const std::string dev_path =
      env_or("DICE_HONEST_ITEMS", DICE_RL_DATA_DIR "/kernel_infilling_dev.json");
  auto dev = load_judge_items(dev_path);
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  for (const JudgeItem& item : *dev) {
    honest.push_back(item_job("dev/" + item.id, item));
  }
  size_t curriculum = 0;
  const std::string curriculum_path = env_or("DICE_CURRICULUM_ITEMS", "");
  if (!curriculum_path.empty()) {
    auto items = load_judge_items(curriculum_path);
    ASSERT_TRUE(items.ok()) << items.status().to_string();
    const size_t count = std::stoul(env_or("DICE_CURRICULUM_SAMPLE", "64"));
    for (const JudgeItem& item : seeded_sample(*items, count, seed)) {
      honest.push_back(item_job("curriculum/" + item.id, item));
      ++curriculum;
    }
  }
  std::vector<Job> hostile;
  for (const char* file : {"gpu_memory_hoarder.py", "endless_kernel.py", "aborts_in_forward.py",
                           "illegal_memory_access.py"}) {
    hostile.push_back({file, read_hack_file(file), reference_});
  }
  const std::string adversarial_dir = std::string(DICE_REWARD_ADVERSARIAL_DIR) + "/gpu/";
  for (const auto& c : adversarial_gpu_corpus()) {
    if (c.control) continue;
    hostile.push_back({c.file, read_source(adversarial_dir + c.file),
                       *c.reference ? read_source(adversarial_dir + c.reference) : reference_});
  }

  const std::vector<Outcome> alone = evaluate_jobs(honest);
  // Interleaved in a seeded order: every honest candidate has hostile ones before and after it.
  std::vector<size_t> order(honest.size() + hostile.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  std::vector<Job> mixed;
  for (size_t i : order)
    mixed.push_back(i < honest.size() ? honest[i] : hostile[i - honest.size()]);
  const std::vector<Outcome> beside = evaluate_jobs(mixed);
  adv::remove_files(adv::marked_files(adv::kGpuMark));
  adv::kill_processes(adv::marked_processes(adv::kGpuMark, /*grace_seconds=*/5));

  int rewarded_alone = 0, rewarded_beside = 0, ours_alone = 0, ours_beside = 0, changed = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (order[k] >= honest.size()) continue;
    const Outcome& a = alone[order[k]];
    const Outcome& b = beside[k];
    rewarded_alone += a.reward > 0;
    rewarded_beside += b.reward > 0;
    ours_alone += failed_by_us(a);
    ours_beside += failed_by_us(b);
    EXPECT_FALSE(failed_by_us(a)) << "among honest neighbours: " << a.line;
    EXPECT_FALSE(failed_by_us(b)) << "beside hostile neighbours: " << b.line;
    if (a.reward != b.reward || a.failure != b.failure) {
      ++changed;
      ADD_FAILURE() << "another verdict beside hostile neighbours:\n  among honest: " << a.line
                    << "\n  beside hostile: " << b.line;
    }
  }
  std::cout << "[ honest corpus ] " << honest.size() << " honest (" << dev->size() << " dev, "
            << curriculum << " curriculum), " << hostile.size()
            << " hostile: among honest neighbours " << rewarded_alone << " rewarded, " << ours_alone
            << " internalError or crashed; beside hostile ones " << rewarded_beside << " rewarded, "
            << ours_beside << " internalError or crashed, " << changed << " verdicts changed"
            << std::endl;
}

}  // namespace
}  // namespace dice
