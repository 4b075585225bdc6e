// The whole reward pipeline on the 60 published infilling tasks (REFERENCE.md section 7) on a
// real GPU: extract -> static checks -> nvcc -> judge.py and runner.py in the sandbox. Expected:
// every task correct at DICE's 1e-2 except 2616 (a wrong kernel: it writes only the first row),
// 6936 (cuDNN, no kernel of its own: staticCheck), seven that call cuBLAS or cuDNN for their
// main op (antiCheat: their modules import the library, module-imports) and two that normalise
// with running statistics where the reference uses the batch's (incorrect on the fresh set drawn
// toward its centre, wrong-on-drawn-inputs): 49 of 60. Prints one line per task and the totals.
//
// Knobs (environment): DICE_DEV_DATA (the JSON), DICE_PYTHON (python with torch; default
// python3), DICE_COMPILE_CACHE (default /tmp/dice-dev-compile-cache: reused across runs),
// DICE_DEV_TRIALS (default 5), DICE_DEV_PARALLEL (candidates in flight; default 16),
// DICE_DEV_LIMIT (first N tasks only), DICE_DEV_SLOTS (candidates evaluated on GPU 0 at once;
// default 4), DICE_DEV_MEMORY_MB (candidate memory rlimit, 0 = none; default 65536).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <capnp/message.h>
#include <gtest/gtest.h>

#include "common/json/fields.h"
#include "reward/pipeline.h"
#include "reward/reward_worker.h"

namespace dice {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

TEST(DevDataGpuTest, PublishedCandidatesAreRewarded) {
  const std::string path = env_or("DICE_DEV_DATA", DICE_RL_DATA_DIR "/kernel_infilling_dev.json");
  std::ifstream in(path, std::ios::binary);
  if (!in) GTEST_SKIP() << "no dev data at " << path << " (set DICE_DEV_DATA)";
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = parse_json(ss.str(), path);
  ASSERT_TRUE(doc.ok()) << doc.status().to_string();
  ASSERT_TRUE(doc->is_array()) << path << ": not a JSON array";

  RewardOptions options;
  options.python_path = env_or("DICE_PYTHON", "python3");
  options.compile_cache_dir = env_or("DICE_COMPILE_CACHE", "/tmp/dice-dev-compile-cache");
  options.correctness_trials = std::stoi(env_or("DICE_DEV_TRIALS", "5"));
  options.compile_jobs = std::stoi(env_or("DICE_DEV_PARALLEL", "16"));
  // DICE_DEV_MEMORY_MB: the candidates' memory rlimit in MiB (0 = none).
  options.sandbox.memory_limit_mb = std::stoll(env_or("DICE_DEV_MEMORY_MB", "65536"));
  auto toolchain = probe_reward_toolchain(options);
  if (!toolchain.ok()) GTEST_SKIP() << "no GPU toolchain: " << toolchain.status().to_string();
  const int slots = std::stoi(env_or("DICE_DEV_SLOTS", "4"));
  RewardPipeline pipeline(options, toolchain.value(),
                          {"dev-data-gpu-test", gpu_slot_names({0}, slots)});
  const auto started = std::chrono::steady_clock::now();

  struct Item {
    std::string id, pytorch, prefix, middle, suffix;
  };
  std::vector<Item> items;
  for (const auto& e : doc->get_array()) {
    items.push_back({json_id(e), json_string(e, "pytorch_code"), json_string(e, "prefix"),
                     json_string(e, "middle"), json_string(e, "suffix")});
  }
  const size_t limit = std::stoul(env_or("DICE_DEV_LIMIT", std::to_string(items.size())));
  if (items.size() > limit) items.resize(limit);

  std::mutex mu;
  std::map<std::string, std::string> lines;
  std::map<std::string, float> rewards;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      const Item& item = items[i];
      capnp::MallocMessageBuilder request_message;
      auto request = request_message.initRoot<schema::EvalRequest>();
      request.setWorkId(i);
      auto task = request.initTask();
      task.setId(item.id);
      task.setPhase(schema::Phase::INFILL);
      task.setReferenceSource(item.pytorch);
      task.setInfillPrefix(item.prefix);
      task.setInfillSuffix(item.suffix);
      request.initCandidate().setText("```python\n" + item.middle + "\n```\n");
      capnp::MallocMessageBuilder verdict_message;
      auto verdict = verdict_message.initRoot<schema::Verdict>();
      pipeline.evaluate(request, verdict);
      std::ostringstream line;
      line << item.id << " reward=" << verdict.getReward()
           << " failure=" << static_cast<int>(verdict.getFailure())
           << " compile_s=" << verdict.getTimings().getCompileSeconds()
           << " eval_s=" << verdict.getTimings().getEvalSeconds()
           << " max_err=" << verdict.getMaxAbsError();
      for (auto f : verdict.getFindings()) line << " [" << f.getCheck().cStr() << "]";
      if (verdict.getReward() == 0) {
        std::string excerpt = verdict.getLogExcerpt().cStr();
        line << "\n    " << excerpt.substr(0, 600);
      }
      std::lock_guard<std::mutex> lock(mu);
      lines[item.id] = line.str();
      rewards[item.id] = verdict.getReward();
      std::cout << line.str() << std::endl;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < options.compile_jobs + slots; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "[ timing ] " << items.size() << " candidates in " << seconds << " s ("
            << 60.0 * items.size() / seconds << " per minute; compile jobs " << options.compile_jobs
            << ", GPU slots " << slots << ", full-header rebuilds "
            << pipeline.compiler().full_header_builds() << ", lean-header fallbacks "
            << pipeline.compiler().lean_header_fallbacks() << ", split fallbacks "
            << pipeline.compiler().split_fallbacks() << ")" << std::endl;

  // cublasLt (4383, 4950, 426, 3020), cublasSgemmStridedBatched (5756), cuDNN (7678 and 3497,
  // whose convolution cuDNN computes; 3497 was first judged on 2026-12-02, once the judge stopped
  // running out of GPU memory beside the runner's NaN filler blocks: docs/BENCHMARKS.md, "Guard
  // bytes around every tensor").
  const std::set<std::string> library_fallbacks = {"4383", "4950", "426", "3020",
                                                   "5756", "7678", "3497"};
  // 6995 (Upsample + BatchNorm3d) and 444 (BatchNorm2d + Hardtanh) normalise with running_mean
  // and running_var, the inference formula, where the reference module is in training mode and
  // uses the batch's statistics: the two agree on get_inputs' standard normal values only. On the
  // H100 (2026-12-07) both failed the timed loop's digests, whose inputs are drawn the same way.
  const std::set<std::string> running_statistics = {"6995", "444"};
  int rewarded = 0;
  for (const auto& [id, reward] : rewards) {
    rewarded += reward > 0;
    // 2616 never offsets by blockIdx: every block computes and writes the first row, and the
    // rest of its torch::empty_like output is never written. Its expected values are ~1e-3, so
    // memory that reads as zero passes at atol 1e-2; the 0xFF (NaN) fill of every tensor the
    // runner's guard allocator hands out is what fails it. 6936 calls cuDNN and has no kernel of
    // its own: the static check rejects it. The library fallbacks call cuBLAS or cuDNN for their
    // main op beside one small kernel of their own: their modules import the library, which the
    // judge refuses before the runner loads them (module_imports.py's vendor-library rule,
    // docs/SECURITY.md). All are asserted below.
    if (id == "2616" || id == "6936" || library_fallbacks.count(id) ||
        running_statistics.count(id)) {
      continue;
    }
    EXPECT_EQ(reward, 1.0f) << lines[id];
  }
  EXPECT_EQ(rewards.count("2616") ? rewards["2616"] : 0.0f, 0.0f) << lines["2616"];
  EXPECT_EQ(rewards.count("6936") ? rewards["6936"] : 0.0f, 0.0f);
  for (const std::string& id : library_fallbacks) {
    if (!rewards.count(id)) continue;  // DICE_DEV_LIMIT left it out
    EXPECT_EQ(rewards[id], 0.0f) << lines[id];
    EXPECT_NE(lines[id].find("[module-imports]"), std::string::npos) << lines[id];
  }
  for (const std::string& id : running_statistics) {
    if (!rewards.count(id)) continue;
    EXPECT_EQ(rewards[id], 0.0f) << lines[id];
    EXPECT_NE(lines[id].find("[wrong-on-drawn-inputs]"), std::string::npos) << lines[id];
  }
  std::cout << "[ summary ] " << rewarded << " of " << rewards.size() << " rewarded" << std::endl;
}

}  // namespace
}  // namespace dice
