// The adversarial corpus's CPU half (tests/reward/adversarial/cpu, indexed in its README.md):
// every candidate that attacks the judge from its own process (class A), the correctness
// semantics a CPU run can judge (B), hidden code (C) and the sandbox (D) goes through
// evaluate_candidate as the reward service runs it: the real SandboxProcess, device "cpu", the
// candidate's "compiled extension" a Python test double (tests/reward/evaluate_fixtures explains
// those). A candidate is caught when its verdict is not correct AND the host shows nothing of it
// afterwards: no dice-adv-* file in the host's shared folders, no connection at the host's
// listeners, no new SysV segment, no dice-adv* process of a sandbox uid left running. The honest
// control must be judged correct. Prints "adversarial corpus: tried N, caught M, escaped K" and
// one line per escape; fails on any escape.
//
// Static checks are not part of evaluate_candidate: each line also says what the static check
// (reward/python/static_check.py) would find in the file, for information only.
#include <capnp/schema.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "common/remove_tree.h"
#include "options/reward_options.h"
#include "reward/evaluate/evaluator.h"
#include "reward/static_check.h"
#include "tests/reward/adversarial_host.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
namespace adv = dice::adversarial;

const fs::path kCorpus = fs::path(DICE_REWARD_TEST_DIR) / "adversarial" / "cpu";
const fs::path kAddReference =
    fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures" / "reference_add.py";
const fs::path kSoftmaxReference = kCorpus / "reference_softmax_wide.py";
// What read_compile_cache.py looks for: a folder like reward/compile/compile.cc's cache (0755).
const fs::path kFakeCompileCache = "/tmp/dice-adversarial-compile-cache";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  const char* file;       // under adversarial/cpu
  const char* extension;  // under adversarial/cpu/extensions
  bool softmax = false;   // reference_softmax_wide.py and module softmax_ext, else reference_add.py
  bool control = false;   // honest: must be judged correct
};

// README.md has the same table with each file's defence.
const std::vector<Case>& corpus() {
  static const std::vector<Case> kAll = {
      {"control/honest.py", "ext_honest.py", false, true},
      {"a_judge/patch_harness_functions.py", "ext_wrong.py"},
      {"a_judge/patch_torch_compare.py", "ext_wrong.py"},
      {"a_judge/tensor_subclass.py", "ext_wrong.py"},
      {"a_judge/frame_reference_output.py", "ext_wrong.py"},
      {"a_judge/gc_reference_output.py", "ext_wrong.py"},
      {"a_judge/forge_json_dumps.py", "ext_wrong.py"},
      {"a_judge/forge_json_encoder.py", "ext_wrong.py"},
      {"a_judge/forge_atexit_frame_nonce.py", "ext_wrong.py"},
      {"a_judge/forge_os_exit.py", "ext_wrong.py"},
      {"a_judge/forge_nonce_file.py", "ext_wrong.py"},
      {"a_judge/forge_sys_stdout.py", "ext_wrong.py"},
      {"a_judge/forge_stdout_fd.py", "ext_wrong.py"},
      {"b_semantics/fp16_output.py", "ext_half.py"},
      {"b_semantics/wide_softmax_zeros.py", "ext_softmax_zeros.py", true},
      {"b_semantics/wide_softmax_constant.py", "ext_softmax_constant.py", true},
      {"b_semantics/mutate_input.py", "ext_mutates.py"},
      {"b_semantics/mutate_reference_params.py", "ext_offset.py"},
      {"c_hidden/exec_obfuscated.py", "ext_wrong.py"},
      {"c_hidden/ctypes_pyrun.py", "ext_wrong.py"},
      {"d_sandbox/write_tmp.py", "ext_wrong.py"},
      {"d_sandbox/write_run_lock.py", "ext_wrong.py"},
      {"d_sandbox/write_dev_shm.py", "ext_wrong.py"},
      {"d_sandbox/write_home.py", "ext_wrong.py"},
      {"d_sandbox/unix_socket.py", "ext_wrong.py"},
      {"d_sandbox/net_localhost.py", "ext_wrong.py"},
      {"d_sandbox/net_outside.py", "ext_honest.py"},
      {"d_sandbox/sysv_shm.py", "ext_wrong.py"},
      {"d_sandbox/unshare_userns.py", "ext_honest.py"},
      {"d_sandbox/mount.py", "ext_honest.py"},
      {"d_sandbox/ptrace.py", "ext_honest.py"},
      {"d_sandbox/read_etc_passwd.py", "ext_honest.py"},
      {"d_sandbox/read_etc_shadow.py", "ext_honest.py"},
      {"d_sandbox/read_compile_cache.py", "ext_honest.py"},
      {"d_sandbox/read_other_scratch.py", "ext_honest.py"},
      {"d_sandbox/read_proc_environ.py", "ext_honest.py"},
      {"d_sandbox/read_home.py", "ext_honest.py"},
      {"d_sandbox/fork_bomb.py", "ext_honest.py"},
      {"d_sandbox/setsid_daemon.py", "ext_wrong.py"},
  };
  return kAll;
}

std::string failure_name(schema::FailureClass failure) {
  for (auto e : capnp::Schema::from<schema::FailureClass>().getEnumerants()) {
    if (e.getOrdinal() == static_cast<uint16_t>(failure)) return e.getProto().getName().cStr();
  }
  return "?";
}

std::string one_line(std::string text, size_t n) {
  for (char& c : text) c = c == '\n' ? ' ' : c;
  return text.size() <= n ? text : text.substr(0, n) + "...";
}

class AdversarialCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
      GTEST_SKIP() << "/usr/bin/python3 has no torch (apt-get install python3-torch)";
    }
    if (geteuid() != 0) {
      GTEST_SKIP() << "the sandbox isolates (namespaces, a uid per run) only when run as root";
    }
    // The listeners first: their port is held by one run of this test at a time, and a second
    // run must not touch the first one's files.
    listeners_ = std::make_unique<adv::HostListeners>();
    ASSERT_EQ(listeners_->error(), "") << "the test cannot listen where the corpus connects";
    ASSERT_EQ(listeners_->drain(), "") << "something else connected to the test's listeners";
    // What read_proc_environ.py looks for: the worker's environment must not reach a candidate.
    std::random_device rd;
    setenv("DICE_ADV_SECRET", std::to_string(rd()).c_str(), 1);
    // Another candidate's evaluation, running meanwhile, for read_other_scratch.py.
    SandboxSpec other;
    other.argv = {"/bin/sleep", "600"};
    other.files = {{"dice-adversarial-secret", "another candidate's file\n"}};
    auto started = SandboxProcess::start(other);
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    other_candidate_ = std::move(started).value();
    // A compile cache as reward/compile/compile.cc leaves it, for read_compile_cache.py.
    fs::create_directories(kFakeCompileCache / "0123abcd");
    fs::permissions(kFakeCompileCache, fs::perms(0755));
    fs::permissions(kFakeCompileCache / "0123abcd", fs::perms(0755));
    std::ofstream(kFakeCompileCache / "0123abcd" / "adv_module.so")
        << "another candidate's build\n";
    adv::remove_files(adv::marked_files(adv::kCpuMark));  // left by an earlier run that was killed
  }
  void TearDown() override {
    other_candidate_.reset();
    if (listeners_ != nullptr && listeners_->error().empty()) {
      remove_tree(kFakeCompileCache).ignore();
    }
  }

  static EvaluatorOptions options() {
    EvaluatorOptions o;
    o.python = "/usr/bin/python3";
    o.device = "cpu";
    o.trials = RewardOptions{}.correctness_trials;  // the released setting
    o.tolerance = RewardOptions{}.tolerance;
    o.sandbox.timeout_seconds = 120;
    o.sandbox.memory_limit_mb = 8192;
    return o;
  }

  // "" when the static check finds nothing fatal, else its fatal rules.
  static std::string static_findings(const std::string& source) {
    StaticCheckOptions o;
    o.python = "/usr/bin/python3";
    auto checked = run_static_check(source, o);
    if (!checked.ok()) return "(static check failed: " + checked.status().message() + ")";
    std::string rules;
    for (const auto& f : checked->findings) {
      if (f.fatal && rules.find(f.check) == std::string::npos) {
        rules += (rules.empty() ? "" : ",") + f.check;
      }
    }
    return rules;
  }

  std::unique_ptr<adv::HostListeners> listeners_;
  std::unique_ptr<SandboxProcess> other_candidate_;
};

TEST_F(AdversarialCpuTest, EveryAttackIsCaughtAndTheControlIsJudgedCorrect) {
  adv::Tally tally;
  std::vector<std::string> rejected_controls;

  for (const Case& c : corpus()) {
    const std::vector<adv::ShmSegment> segments_before = adv::shm_segments();
    const std::string source = read_file(kCorpus / c.file);
    ASSERT_FALSE(source.empty()) << "cannot read " << (kCorpus / c.file);
    CompileOutcome module;
    module.module_name = c.softmax ? "softmax_ext" : "fused_ext";
    module.module_path = (kCorpus / "extensions" / c.extension).string();
    auto evaluated = evaluate_candidate(
        {read_file(c.softmax ? kSoftmaxReference : kAddReference), {}, source, {module}, {}},
        options());
    ASSERT_TRUE(evaluated.ok()) << c.file << ": " << evaluated.status().to_string();
    const EvaluationReport& r = evaluated.value();

    // From outside, after the run.
    std::vector<std::string> effects;
    for (const auto& path : adv::marked_files(adv::kCpuMark)) effects.push_back("left " + path);
    const std::string connected = listeners_->drain();
    if (!connected.empty()) effects.push_back(connected);
    for (const auto& s : adv::new_marked_segments(segments_before)) {
      effects.push_back("SysV segment key " + std::to_string(s.key) + " shmid " +
                        std::to_string(s.shmid) + " of uid " + std::to_string(s.creator_uid) +
                        " persists");
    }
    const auto processes = adv::marked_processes(adv::kCpuMark, /*grace_seconds=*/5);
    for (const auto& p : processes) {
      effects.push_back("process " + std::to_string(p.pid) + " of uid " + std::to_string(p.uid) +
                        " still runs: " + p.name);
    }
    adv::remove_files(adv::marked_files(adv::kCpuMark));
    adv::remove_segments(adv::new_marked_segments(segments_before));
    adv::kill_processes(processes);

    std::string verdict = failure_name(r.failure) + (r.correct ? " (correct)" : "");
    if (!r.correct) verdict += ": " + one_line(r.detail, 100);
    const std::string rules = static_findings(source);
    std::string line = std::string(c.file) + ": " + verdict +
                       " [static check: " + (rules.empty() ? "nothing fatal" : rules) + "]";
    for (const auto& e : effects) line += "\n    host: " + e;

    if (c.control) {
      const bool ok = r.correct && effects.empty();
      std::cout << (ok ? "[ control ] " : "[ CONTROL REJECTED ] ") << line << std::endl;
      if (!ok) rejected_controls.push_back(line + "\n    log: " + one_line(r.log_tail, 600));
      continue;
    }
    std::string why;
    if (r.correct) why = "judged correct";
    for (const auto& e : effects) why += (why.empty() ? "" : "; ") + e;
    tally.add(c.file, !why.empty(), why);
    std::cout << (why.empty() ? "[ caught ] " : "[ ESCAPED ] ") << line << std::endl;
  }

  std::cout << tally.summary() << std::endl;
  EXPECT_EQ(tally.escaped(), 0) << tally.summary();
  EXPECT_TRUE(rejected_controls.empty())
      << "an honest candidate was rejected (a defence that rejects everything is none):\n"
      << rejected_controls.front();
}

// Every candidate file of the corpus is in the table above: none is left out unseen.
TEST(AdversarialCorpusTest, EveryCpuCandidateIsListed) {
  std::set<std::string> listed;
  for (const Case& c : corpus()) listed.insert(c.file);
  for (const auto& entry : fs::recursive_directory_iterator(kCorpus)) {
    const fs::path rel = fs::relative(entry.path(), kCorpus);
    if (entry.path().extension() != ".py" || rel.begin()->string() == "extensions" ||
        rel.parent_path().empty()) {
      continue;  // test doubles and references
    }
    EXPECT_EQ(listed.count(rel.string()), 1u) << rel << " is not in adversarial_test.cc's corpus";
  }
}

}  // namespace
}  // namespace dice
