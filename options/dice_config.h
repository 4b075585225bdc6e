// DiceConfig: the whole configuration of a dice run, one options struct per component, read from
// one YAML file (configs/local.yaml is the single-machine default) plus the curriculum file and,
// optionally, a model-shape file that it names.
//
//   DICE_ASSIGN_OR_RETURN(DiceConfig config, load_dice_config(path,
//   {"learner.optimizer.lr=2e-6"}));
//
// Top-level keys: run, curriculum_file, model_shape_file, learner, rollout, reward, cluster.
// Relative paths resolve against the directory of the file they are written in (see load.h).
// `dice-config docs` lists every key with its type, default and meaning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config/field_checks.h"
#include "common/log.h"
#include "common/status.h"
#include "options/cluster_options.h"
#include "options/curriculum_options.h"
#include "options/learner_options.h"
#include "options/model_shape.h"
#include "options/reward_options.h"
#include "options/rollout_options.h"

namespace dice {

inline constexpr config::EnumName<LogLevel> kLogLevelNames[] = {{LogLevel::kDebug, "debug"},
                                                                {LogLevel::kInfo, "info"},
                                                                {LogLevel::kWarn, "warn"},
                                                                {LogLevel::kError, "error"}};
constexpr const auto& enum_names(LogLevel) {
  return kLogLevelNames;
}

// What identifies a run and where it writes what outlives it.
struct RunOptions {
  std::string id;
  std::string reward_log_path = "runs/reward_log";
  LogLevel log_level = LogLevel::kInfo;
  std::int64_t min_free_disk_mb = 1024;

  template <class V>
  void visit_fields(V& v) {
    v.field("id", id,
            "Run id carried by every log line and message; empty = made from the start time. "
            "Default: empty");
    v.field("reward_log_path", reward_log_path,
            "RocksDB folder recording every verdict of the run. Default: runs/reward_log",
            config::is_path(), config::non_empty());
    v.field("log_level", log_level, "Lowest level logged. Default: info");
    v.field("min_free_disk_mb", min_free_disk_mb,
            "MiB the learner's large writes must leave free on their disk, checked before the "
            "first byte: each policy checkpoint (2 bytes a parameter in bf16: 8 GB at SDAR-4B) "
            "and resume folder (about 14 bytes a parameter with the optimizer state: 56 GB). "
            "One that would not fit is refused with an error naming the folder, the bytes "
            "needed and free, and the previous checkpoint and resume folder stay. The reward "
            "log checks each batch of verdicts before RocksDB sees it and stops at a quarter of "
            "this floor (the rest is room for RocksDB's own flushes and compactions, and the "
            "logs); the run then ends with exit 3, the verdicts already written kept. 0 = only "
            "the write's own size. Default: 1024",
            config::at_least(0));
  }
};

struct DiceConfig {
  RunOptions run;
  std::string curriculum_file;
  std::string model_shape_file;
  LearnerOptions learner;
  RolloutOptions rollout;
  RewardOptions reward;
  ClusterOptions cluster;

  // Loaded by load_dice_config from the files named above; not keys of the main file, and not
  // printed with it.
  CurriculumOptions curriculum;
  std::optional<ModelShape> model_shape;

  template <class V>
  void visit_fields(V& v) {
    v.field("run", run, "Run identity and outputs.");
    v.field("curriculum_file", curriculum_file,
            "RL curriculum (options/curriculum_options.h). Required.", config::required(),
            config::is_path(), config::non_empty());
    v.field("model_shape_file", model_shape_file,
            "Architecture of the policy (configs/models/*.yaml); empty = take it from "
            "rollout.model_path's config.json. Default: empty",
            config::is_path());
    v.field("learner", learner, "The learner service.");
    v.field("rollout", rollout, "Rollout workers.");
    v.field("reward", reward, "Reward workers.");
    v.field("cluster", cluster, "Placement of the services.");
  }
};

// Loads `path` with `overrides` ("a.b.c=value", applied in order, before decoding), then the
// curriculum and model-shape files it names, and checks the files against each other. Errors
// are invalid-argument (every problem, each as "file:line:col: key.path: what"), not-found or
// io-error naming the file.
Result<DiceConfig> load_dice_config(const std::string& path,
                                    const std::vector<std::string>& overrides);

Result<CurriculumOptions> load_curriculum(const std::string& path);
Result<ModelShape> load_model_shape(const std::string& path);

// The main file's keys as block YAML: what --print-config shows. Loading it gives the same config.
std::string print_dice_config(const DiceConfig& config);

}  // namespace dice
