// DiceConfig and the checked-in configs: every file in configs/ loads, values match the released
// DICE settings, print -> reload is the identity, files are checked against each other, and each
// field's documented default is its real default.
#include "options/dice_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/config/describe.h"
#include "common/config/encode.h"
#include "common/config/load.h"
#include "common/config/scalar_text.h"
#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

const std::string kSource = DICE_SOURCE_DIR;
const std::string kLocal = kSource + "/configs/local.yaml";

// A fresh folder under /tmp, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/dice_config_testXXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { EXPECT_TRUE(remove_tree(path_).ok()); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string path = path_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The curriculum `r` did not load, and its message holds every one of `expected`.
void expect_errors(const Result<CurriculumOptions>& r, const std::vector<std::string>& expected) {
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  for (const std::string& e : expected) {
    EXPECT_NE(m.find(e), std::string::npos) << "no '" << e << "' in:\n" << m;
  }
}

TEST(DiceConfigTest, EveryCheckedInConfigLoads) {
  int loaded = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kSource + "/configs")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".yaml") continue;
    std::string path = entry.path().string();
    std::string folder = entry.path().parent_path().filename().string();
    Status status;
    if (folder == "models") {
      status = load_model_shape(path).status();
    } else if (folder == "curriculum") {
      status = load_curriculum(path).status();
    } else {
      status = load_dice_config(path, {}).status();
    }
    EXPECT_TRUE(status.ok()) << path << ": " << status.to_string();
    ++loaded;
  }
  EXPECT_GE(loaded, 5);  // local, one curriculum, three model shapes
}

TEST(DiceConfigTest, LocalConfigHasTheReleasedSettings) {
  Result<DiceConfig> r = load_dice_config(kLocal, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const DiceConfig& c = *r;
  EXPECT_EQ(c.learner.tasks_per_step, 64);
  EXPECT_EQ(c.learner.group_size, 16);
  EXPECT_DOUBLE_EQ(c.learner.loss.clip_eps, 0.2);
  EXPECT_DOUBLE_EQ(c.learner.loss.kl_beta, 0.01);
  EXPECT_EQ(c.learner.loss.kl_estimator, KlEstimator::kK3);
  EXPECT_DOUBLE_EQ(c.learner.optimizer.lr, 1e-6);
  EXPECT_EQ(c.learner.data_parallel.shard, ShardMode::kReplica);  // one GPU: nothing to shard
  EXPECT_EQ(c.rollout.sampling.block_size, 4);
  EXPECT_EQ(c.rollout.sampling.remasking, Remasking::LOW_CONFIDENCE_DYNAMIC);
  EXPECT_EQ(c.rollout.mask_token_id, 151669u);
  EXPECT_EQ(c.reward.timeout_seconds, 300);
  EXPECT_EQ(c.reward.policy.kind, RewardPolicy::kBinary);
  ASSERT_EQ(c.cluster.nodes.size(), 1u);
  EXPECT_EQ(c.cluster.nodes[0].roles.size(), 3u);
  // Relative paths in the file resolve against configs/.
  EXPECT_EQ(c.run.reward_log_path, kSource + "/runs/local/reward_log");
  EXPECT_EQ(c.curriculum_file, kSource + "/configs/curriculum/dice.yaml");
  // The referenced files are loaded too.
  ASSERT_EQ(c.curriculum.phases.size(), 2u);
  EXPECT_EQ(c.curriculum.phases[0].name, "infill");
  EXPECT_EQ(c.curriculum.phases[0].kind, TaskKind::kInfill);
  EXPECT_EQ(c.curriculum.phases[0].steps, 20);
  EXPECT_EQ(c.curriculum.phases[1].kind, TaskKind::kEndToEnd);
  EXPECT_EQ(c.curriculum.phases[1].steps, 100);
  EXPECT_EQ(c.curriculum.phases[1].task_files[0],
            kSource + "/data/dice-rl/end_to_end_kernel_generation_4000.json");
  ASSERT_TRUE(c.model_shape.has_value());
  EXPECT_EQ(c.model_shape->hidden_size, 2560);
}

// DICE's 8-GPU setting: SDAR-8B with the optimizer and the layers' weights sharded over the
// learner's 8 GPUs (ZeRO-3, as DICE's release trains it), which a rollout and a reward worker each
// share (so weights go through checkpoints, not NCCL).
TEST(DiceConfigTest, EightGpuConfigShardsTheParametersOverTheLearnersGpus) {
  Result<DiceConfig> r = load_dice_config(kSource + "/configs/dice-8gpu.yaml", {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const DiceConfig& c = *r;
  EXPECT_EQ(c.learner.data_parallel.shard, ShardMode::kParameters);
  EXPECT_EQ(c.learner.data_parallel.devices, 8);
  EXPECT_FALSE(c.learner.optimizer_on_cpu);
  EXPECT_TRUE(c.learner.activation_checkpointing);
  ASSERT_TRUE(c.model_shape.has_value());
  EXPECT_EQ(c.model_shape->hidden_size, 4096);  // SDAR-8B
  ASSERT_EQ(c.cluster.nodes.size(), 1u);
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(c.cluster.nodes[0].gpus.at("learner"), all);
  EXPECT_EQ(c.cluster.worker_count(NodeRole::kRollout), 8);
  EXPECT_EQ(c.cluster.worker_count(NodeRole::kReward), 8);
  EXPECT_EQ(c.rollout.weight_sync, WeightSync::kCheckpoint);
  // The released DICE settings, as in local.yaml.
  EXPECT_EQ(c.learner.tasks_per_step, 64);
  EXPECT_EQ(c.learner.group_size, 16);
  EXPECT_EQ(c.rollout.sampling.max_new_tokens, 4096);
}

TEST(DiceConfigTest, ModelShapesMatchTheReference) {
  struct Expected {
    const char* file;
    int hidden, intermediate, layers, heads, kv_heads;
    bool tied;
  };
  for (const Expected& e : {Expected{"sdar-1.7b.yaml", 2048, 6144, 28, 16, 8, true},
                            Expected{"sdar-4b.yaml", 2560, 9728, 36, 32, 8, false},
                            Expected{"sdar-8b.yaml", 4096, 12288, 36, 32, 8, false}}) {
    Result<ModelShape> r = load_model_shape(kSource + "/configs/models/" + e.file);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->hidden_size, e.hidden) << e.file;
    EXPECT_EQ(r->intermediate_size, e.intermediate) << e.file;
    EXPECT_EQ(r->num_hidden_layers, e.layers) << e.file;
    EXPECT_EQ(r->num_attention_heads, e.heads) << e.file;
    EXPECT_EQ(r->num_key_value_heads, e.kv_heads) << e.file;
    EXPECT_EQ(r->tie_word_embeddings, e.tied) << e.file;
    EXPECT_EQ(r->vocab_size, 151936) << e.file;
    EXPECT_EQ(r->mask_token_id, 151669u) << e.file;
  }
}

TEST(DiceConfigTest, PrintThenReloadFromAnotherFolderIsTheSameConfig) {
  Result<DiceConfig> first = load_dice_config(kLocal, {"learner.optimizer.lr=3e-7", "run.id=rt"});
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  std::string printed = print_dice_config(*first);
  TempDir dir;
  Result<DiceConfig> second = load_dice_config(dir.write("printed.yaml", printed), {});
  ASSERT_TRUE(second.ok()) << second.status().to_string() << "\n" << printed;
  EXPECT_EQ(print_dice_config(*second), printed);
  EXPECT_EQ(config::to_yaml_text(second->curriculum), config::to_yaml_text(first->curriculum));
  EXPECT_DOUBLE_EQ(second->learner.optimizer.lr, 3e-7);
  EXPECT_EQ(second->run.id, "rt");
}

TEST(DiceConfigTest, LearnerPhasesMustNameCurriculumPhases) {
  Result<DiceConfig> r = load_dice_config(kLocal, {"learner.phases=[e2e]"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->learner.phases, std::vector<std::string>{"e2e"});
  r = load_dice_config(kLocal, {"learner.phases=[infill, e2d]"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "override 'learner.phases=[infill, e2d]': learner.phases[1]: no phase 'e2d' in " +
                kSource + "/configs/curriculum/dice.yaml (did you mean 'e2e'?)");
}

TEST(DiceConfigTest, TheAsynchronousModeLoadsAndRefusesADropThatKeepsNothing) {
  Result<DiceConfig> r = load_dice_config(kLocal, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->learner.async.max_ahead, 0);  // DICE's synchronous loop
  r = load_dice_config(kLocal, {"learner.async.max_ahead=2", "learner.async.stale=drop",
                                "learner.async.importance_cap=1.5"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->learner.async.max_ahead, 2);
  EXPECT_EQ(r->learner.async.stale, StaleSamples::kDrop);
  EXPECT_DOUBLE_EQ(r->learner.async.importance_cap, 1.5);
  r = load_dice_config(
      kLocal, {"learner.async.max_ahead=1", "learner.async.stale=drop", "learner.max_staleness=0"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("learner.async.stale: drop with max_staleness 0 drops every "
                                      "sample a step ahead makes"),
            std::string::npos)
      << r.status().to_string();
  r = load_dice_config(kLocal, {"learner.async.stale=sometimes"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("learner.async.stale"), std::string::npos)
      << r.status().to_string();
}

TEST(DiceConfigTest, ErrorsInAReferencedFileNameThatFileAndTheReference) {
  TempDir dir;
  std::string curriculum = dir.write(
      "c.yaml",
      "phases:\n  - name: a\n    kind: infill\n    task_files: [x.json]\n    steps: zero\n");
  Result<DiceConfig> r = load_dice_config(kLocal, {"curriculum_file=" + curriculum});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "override 'curriculum_file=" + curriculum +
                                      "': curriculum_file: " + curriculum +
                                      ":5:12: phases[0].steps: expected an integer, got 'zero'");

  r = load_dice_config(kLocal, {"curriculum_file=/nonexistent/c.yaml"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/c.yaml: no such config file"),
            std::string::npos);
}

// The curriculum's scheduling keys (issue 21 item 3) are checked on load, each error at its
// file:line:column and key path.
TEST(DiceConfigTest, CurriculumSchedulingKeysAreCheckedWithTheirPlace) {
  TempDir dir;
  const std::string good =
      dir.write("good.yaml",
                "scheduling: mixed\n"
                "phases:\n"
                "  - name: a\n"
                "    task_files: [x.json]\n"
                "    steps: 2\n"
                "    promotion: {threshold: 0.6, window: 32}\n"
                "    pass_rate_band: {lo: 0.1, hi: 0.9, window: 2}\n"
                "    reward_policy: {kind: speedup_threshold, min_speedup: 1.2}\n"
                "  - {name: b, scheduling: sequential_select, task_files: [x.json], steps: 1}\n");
  Result<CurriculumOptions> loaded = load_curriculum(good);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->scheduling, TaskScheduling::kMixed);
  const CurriculumPhase& a = loaded->phases[0];
  EXPECT_FALSE(a.scheduling.has_value());  // the curriculum's
  EXPECT_DOUBLE_EQ(a.promotion.threshold, 0.6);
  EXPECT_EQ(a.promotion.window, 32);
  ASSERT_TRUE(a.pass_rate_band.has_value());
  EXPECT_DOUBLE_EQ(a.pass_rate_band->hi, 0.9);
  ASSERT_TRUE(a.reward_policy.has_value());
  EXPECT_EQ(a.reward_policy->kind, RewardPolicy::kSpeedupThreshold);
  EXPECT_EQ(loaded->phases[1].scheduling, TaskScheduling::kSequentialSelect);

  const std::string typo = dir.write(
      "typo.yaml", "scheduling: mixd\nphases:\n  - {name: a, task_files: [x.json], steps: 1}\n");
  Result<CurriculumOptions> r = load_curriculum(typo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), typo +
                                      ":1:13: scheduling: expected one of sequential_select, "
                                      "mixed, got 'mixd' (did you mean 'mixed'?)");

  const std::string bad =
      dir.write("bad.yaml",
                "phases:\n"
                "  - name: a\n"
                "    task_files: [x.json]\n"
                "    steps: 2\n"
                "    pass_rate_band: {lo: 0.8, hi: 0.2}\n"
                "    promotion: {threshold: 1.5}\n"
                "  - {name: s, type: sft, sft_data: d.json, scheduling: mixed}\n");
  expect_errors(load_curriculum(bad),
                {bad + ":5:26: phases[0].pass_rate_band.lo: greater than hi",
                 bad + ":6:28: phases[0].promotion.threshold: must be <= 1, got 1.5",
                 bad + ":7:56: phases[1].scheduling: an sft phase has no tasks to schedule"});
}

// A phase's own sampling (issue 48): its keys load, and a phase that cannot sample with them is
// named at its key path.
TEST(DiceConfigTest, PhaseSamplingIsCheckedWithItsPlace) {
  TempDir dir;
  const std::string good = dir.write("good.yaml",
                                     "phases:\n"
                                     "  - name: a\n"
                                     "    task_files: [x.json]\n"
                                     "    steps: 2\n"
                                     "    sampling: {temperature: 1.3, remasking: random}\n"
                                     "  - {name: b, task_files: [x.json], steps: 1}\n");
  Result<CurriculumOptions> loaded = load_curriculum(good);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const PhaseSampling& a = loaded->phases[0].sampling;
  ASSERT_TRUE(a.temperature.has_value());
  EXPECT_DOUBLE_EQ(*a.temperature, 1.3);
  EXPECT_EQ(a.remasking, Remasking::RANDOM);
  EXPECT_FALSE(a.threshold.has_value());
  EXPECT_FALSE(loaded->phases[1].sampling.any());

  const std::string bad =
      dir.write("bad.yaml",
                "phases:\n"
                "  - name: a\n"
                "    task_files: [x.json]\n"
                "    steps: 2\n"
                "    sampling: {temperature: 0}\n"
                "  - {name: e, type: eval, task_files: [x.json], sampling: {temperature: 1.3}}\n"
                "  - {name: s, type: sft, sft_data: d.json, sampling: {remasking: random}}\n");
  expect_errors(load_curriculum(bad),
                {bad + ":5:29: phases[0].sampling.temperature: must be > 0",
                 bad + ":6:59: phases[1].sampling: a greedy phase decodes at temperature 0",
                 bad + ":7:54: phases[2].sampling: an sft phase samples nothing"});

  const std::string typo = dir.write(
      "typo.yaml",
      "phases:\n  - {name: a, task_files: [x.json], steps: 1, sampling: {remasking: randm}}\n");
  expect_errors(load_curriculum(typo),
                {"phases[0].sampling.remasking: expected one of low_confidence_static, "
                 "low_confidence_dynamic, sequential, entropy_bounded, random, got 'randm' (did "
                 "you mean 'random'?)"});
}

TEST(DiceConfigTest, FilesAreCheckedAgainstEachOther) {
  Result<DiceConfig> r = load_dice_config(kLocal, {"rollout.mask_token_id=151670"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rollout.mask_token_id: differs from mask_token_id 151669"),
            std::string::npos)
      << r.status().message();
}

TEST(DiceConfigTest, ComponentChecksCatchBadCombinations) {
  auto error_of = [](const std::vector<std::string>& overrides) {
    Result<DiceConfig> r = load_dice_config(kLocal, overrides);
    return r.ok() ? std::string("(loaded)") : r.status().message();
  };
  EXPECT_EQ(error_of({"rollout.sampling.denoising_steps=8"}),
            "override 'rollout.sampling.denoising_steps=8': rollout.sampling.denoising_steps: must "
            "be at most "
            "block_size (4): each step commits at least one token, got 8");
  EXPECT_NE(error_of({"cluster.backend=slurm"})
                .find("cluster.slurm.partition: required with backend slurm"),
            std::string::npos);
  EXPECT_NE(error_of({"reward.policy.kind=speedup_threshold"}).find("needs timing.enabled: true"),
            std::string::npos);
  EXPECT_NE(error_of({"cluster.nodes[0].roles=[rollout, reward]"})
                .find("cluster.nodes: exactly one node must have role learner, found 0"),
            std::string::npos);
  EXPECT_NE(error_of({"cluster.learner.metrics_port=5555"})
                .find("cluster.learner.metrics_port: must differ from port"),
            std::string::npos);
  EXPECT_NE(error_of({"reward.sandbox.cpu_threads=40"})
                .find("reward.sandbox.cpu_threads: at most half of max_processes (64)"),
            std::string::npos)
      << error_of({"reward.sandbox.cpu_threads=40"});
  EXPECT_EQ(error_of({"reward.sandbox.cpu_threads=40", "reward.sandbox.max_processes=128"}),
            "(loaded)");
  // Located at the section the missing key belongs in (the override only changed the mode).
  EXPECT_NE(error_of({"learner.mode=sft"})
                .find("configs/local.yaml:18:1: learner.sft.data_file: required when mode is sft"),
            std::string::npos);
}

TEST(DiceConfigTest, RewardKernelCheckIsAutoProfilerOrCupti) {
  Result<DiceConfig> defaults = load_dice_config(kLocal, {});
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(defaults.value().reward.kernel_check, KernelCheck::kAuto);
  Result<DiceConfig> cupti = load_dice_config(kLocal, {"reward.kernel_check=cupti"});
  ASSERT_TRUE(cupti.ok()) << cupti.status().message();
  EXPECT_EQ(cupti.value().reward.kernel_check, KernelCheck::kCupti);
  Result<DiceConfig> bogus = load_dice_config(kLocal, {"reward.kernel_check=nvtx"});
  ASSERT_FALSE(bogus.ok());
  EXPECT_NE(bogus.status().message().find("reward.kernel_check"), std::string::npos)
      << bogus.status().message();
  EXPECT_NE(bogus.status().message().find("profiler"), std::string::npos)
      << bogus.status().message();
}

// Each field's doc ends with "Default: X" (or says "Required."); X must be the real default, so
// the docs cannot drift from the code.
template <class T>
void expect_documented_defaults_match() {
  for (const config::FieldDoc& doc : config::describe_fields<T>()) {
    if (doc.section) continue;
    if (doc.checks.find("required") != std::string::npos) {
      EXPECT_NE(doc.doc.find("Required."), std::string::npos) << doc.path;
      continue;
    }
    std::size_t at = doc.doc.rfind("Default: ");
    ASSERT_NE(at, std::string::npos) << doc.path << " has no 'Default: X' in its doc";
    std::string documented = doc.doc.substr(at + 9);
    if (doc.path == "cluster.nodes") continue;  // a list of sections, described in words
    if (documented == doc.default_value) continue;
    if (documented == "empty" &&
        (doc.default_value == "\"\"" || doc.default_value == "[]" || doc.default_value == "{}")) {
      continue;
    }
    if (documented == "null" && doc.default_value == "~") continue;
    double a = 0, b = 0;
    if (config::parse_double_text(documented, &a) &&
        config::parse_double_text(doc.default_value, &b) && a == b) {
      continue;
    }
    ADD_FAILURE() << doc.path << ": documented default '" << documented << "' but the default is '"
                  << doc.default_value << "'";
  }
}

TEST(DiceConfigTest, DocumentedDefaultsAreTheRealDefaults) {
  expect_documented_defaults_match<DiceConfig>();
  expect_documented_defaults_match<CurriculumOptions>();
  expect_documented_defaults_match<ModelShape>();
}

TEST(DiceConfigTest, DefaultConstructedConfigNeedsOnlyTheRequiredKeys) {
  DiceConfig config;
  Status status = config::validate_config(config);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "curriculum_file: must not be empty\nrollout.model_path: must not be empty");
  config.curriculum_file = "/c.yaml";
  config.rollout.model_path = "/m";
  EXPECT_TRUE(config::validate_config(config).ok());
}

// reward.libraries, the reward policy's rule on library calls: own kernels only unless a config
// says allowed, a name outside the two refused naming the key and the choices, and the row
// `dice-config docs` prints.
TEST(DiceConfigTest, LibraryCallsIsANamedRewardOption) {
  Result<DiceConfig> local = load_dice_config(kLocal, {});
  ASSERT_TRUE(local.ok()) << local.status().message();
  EXPECT_EQ(local->reward.libraries, LibraryCalls::kOwnKernelsOnly);
  Result<DiceConfig> allowed = load_dice_config(kLocal, {"reward.libraries=allowed"});
  ASSERT_TRUE(allowed.ok()) << allowed.status().message();
  EXPECT_EQ(allowed->reward.libraries, LibraryCalls::kAllowed);
  Result<DiceConfig> bad = load_dice_config(kLocal, {"reward.libraries=cublas"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "reward.libraries: expected one of own_kernels_only, allowed, got 'cublas'"),
            std::string::npos)
      << bad.status().message();
  const std::string docs = config::fields_markdown(config::describe_fields<DiceConfig>());
  const std::size_t row = docs.find("reward.libraries");
  ASSERT_NE(row, std::string::npos);
  const std::string line = docs.substr(row, docs.find('\n', row) - row);
  EXPECT_NE(line.find("Default: own_kernels_only"), std::string::npos) << line;
  EXPECT_NE(line.find("vendor-library"), std::string::npos) << line;
}

}  // namespace
}  // namespace dice
