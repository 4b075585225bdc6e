// judge_reuse_bench: what a judge that serves candidate after candidate (reward.judge_jobs)
// saves, measured as the evaluation processes' CPU seconds per candidate and candidates a minute,
// each --judge-jobs value in the same run on the same candidates. The candidates are the
// evaluator tests' CPU test doubles (a Python stand-in for the compiled extension, the real
// sandboxed judge and runner), judged one after another through one EvaluatorPrestart, as a GPU
// slot judges them; on a GPU node `dice-judge --judge-jobs N` measures the same with real
// kernels.
//
//   judge_reuse_bench [--python /usr/bin/python3] [--candidates 24] [--judge-jobs 1,16]
//                     [--device cpu] [--fixtures DIR]
//
// Prints, per --judge-jobs value: candidates, wall seconds, candidates a minute, the machine's
// busy CPU seconds over the row per candidate (the processes started ahead included; run it on a
// quiet machine), and the verdicts (all must be correct).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/read_file.h"
#include "reward/evaluate/evaluator.h"

namespace {

namespace fs = std::filesystem;

struct Flags {
  std::string python = "/usr/bin/python3";
  int candidates = 24;
  std::vector<int> judge_jobs = {1, 16};
  std::string device = "cpu";
  std::string fixtures = DICE_EVALUATE_FIXTURES_DIR;
};

bool parse(int argc, char** argv, Flags* flags) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--python") {
      flags->python = value;
    } else if (flag == "--candidates") {
      flags->candidates = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--device") {
      flags->device = value;
    } else if (flag == "--fixtures") {
      flags->fixtures = value;
    } else if (flag == "--judge-jobs") {
      flags->judge_jobs.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');) {
        flags->judge_jobs.push_back(std::max(1, std::atoi(item.c_str())));
      }
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !flags->judge_jobs.empty();
}

// A fixture's text; an empty one where it cannot be read (the verdicts then say so).
std::string read_text(const fs::path& path) {
  auto text = dice::read_file(path.string());
  if (!text.ok()) std::fprintf(stderr, "%s\n", text.status().to_string().c_str());
  return text.ok() ? *text : "";
}

// The machine's busy CPU seconds so far (/proc/stat: user, nice, system, irq, softirq, steal).
// Not the children's rusage: a sandbox killed at its end (every runner is) hands its processes'
// CPU to no one's rusage.
double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return static_cast<double>(user + nice + system + irq + softirq + steal) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!parse(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: judge_reuse_bench [--python P] [--candidates N] [--judge-jobs 1,16] "
                 "[--device cpu] [--fixtures DIR]\n");
    return 2;
  }
  const fs::path dir = flags.fixtures;
  dice::CompileOutcome module;
  module.module_name = "fused_ext";
  module.module_path = (dir / "fake_extension_ok.py").string();
  const dice::EvaluationJob job{
      read_text(dir / "reference_add.py"), {}, read_text(dir / "candidate_add.py"), {module}, {}};
  std::printf("%-10s %10s %8s %10s %14s %8s\n", "judge_jobs", "candidates", "wall_s", "per_min",
              "cpu_s_per_cand", "correct");
  for (int judge_jobs : flags.judge_jobs) {
    dice::EvaluatorOptions options;
    options.python = flags.python;
    options.device = flags.device;
    options.trials = 2;
    options.sandbox.timeout_seconds = 120;
    options.sandbox.memory_limit_mb = 8192;
    options.judge_jobs = judge_jobs;
    const double cpu_before = machine_busy_seconds();
    const auto start = std::chrono::steady_clock::now();
    int correct = 0;
    {
      dice::EvaluatorPrestart prestart;
      for (int i = 0; i < flags.candidates; ++i) {
        auto report = dice::evaluate_candidate(job, options, &prestart);
        if (report.ok() && report->correct) ++correct;
        if (!report.ok()) {
          std::fprintf(stderr, "candidate %d: %s\n", i, report.status().to_string().c_str());
        }
      }
    }  // the processes started ahead end here, and are reaped: their CPU counts too
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = machine_busy_seconds() - cpu_before;
    std::printf("%-10d %10d %8.1f %10.1f %14.2f %8d\n", judge_jobs, flags.candidates, wall,
                60.0 * flags.candidates / wall, cpu / flags.candidates, correct);
    std::fflush(stdout);
  }
  return 0;
}
