// `dice-cluster wait` on a terminal, as a person following a run sees it: the toy run of
// tests/system (dice-learner, dice-rollout and dice-reward as real processes on the CPU, the
// reward extraction-only) with an sft phase, an evaluation and two RL steps, followed by
// `dice-cluster wait` inside a real terminal emulator (a private tmux server), whose screen is
// read back once the learner has ended. The screen must hold the human view (cluster/run_view.h):
// one line for the SFT phase (its live line, redrawn in place, not a line per step), the
// evaluation as a table, a row per RL step, the end, and no logfmt line; the clean end reports no
// worker dead. The learner's full log keeps every SFT step line, and `wait --log` on the same
// terminal prints the log lines as they are. Skipped, saying so, without tmux or Qwen3's
// tokenizer.json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/free_port.h"
#include "tests/support/shell_command.h"
#include "tests/system/system_test_data.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

using testing_util::CommandResult;
using testing_util::run_command;

std::string quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// A private tmux server (its own socket, no user config) with one window of a fixed size.
class Terminal {
 public:
  explicit Terminal(fs::path socket) : socket_(std::move(socket)) {}
  ~Terminal() { run_command(tmux() + " kill-server"); }

  // Runs `command` in a new window; "[exit N]" is printed when it ends.
  CommandResult start(const std::string& command) {
    return run_command(tmux() + " new-session -d -x 160 -y 50 -s view " +
                       quote(command + "; echo \"[exit $?]\"; sleep 3600"));
  }

  // The window's text, scrollback included, wrapped lines joined.
  std::string screen() { return run_command(tmux() + " capture-pane -p -J -S - -t view").output; }

  // The screen once the command has ended, or "" after `seconds`.
  std::string screen_when_done(int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = screen();
      if (text.find("[exit ") != std::string::npos) return text;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return "";
  }

  void close() { run_command(tmux() + " kill-server"); }

 private:
  std::string tmux() const { return "tmux -f /dev/null -S " + quote(socket_.string()); }
  fs::path socket_;
};

class WaitViewSystemTest : public testing_util::ToySystemTest {
 protected:
  void SetUp() override {
    if (run_command("tmux -V").rc != 0) GTEST_SKIP() << "no tmux (tools/setup installs it)";
    ToySystemTest::SetUp();
  }
};

TEST_F(WaitViewSystemTest, ATerminalShowsProgressTablesAndNoFirehose) {
  ASSERT_NO_FATAL_FAILURE(make_data_and_model());
  // 32 SFT samples in batches of 8 for 4 epochs: 16 SFT steps, each a log line.
  std::ofstream(dir_ / "curriculum.yaml")
      << "phases:\n"
         "  - {name: sft, type: sft, sft_data: data/sft.json, epochs: 4}\n"
         "  - {name: eval-sft, type: eval, kind: infill, task_files: [data/tasks.json]}\n"
         "  - {name: rl, kind: infill, task_files: [data/tasks.json], steps: 2,\n"
         "     tasks_per_step: 2, samples_per_task: 4}\n";
  const std::string run_id = "view-" + std::to_string(getpid());
  std::vector<std::string> overrides = toy_run_overrides(run_id, testing_util::free_port());
  overrides.push_back("rollout.sampling.max_new_tokens=64");

  std::string args;
  for (const auto& o : overrides) args += " " + quote(o);
  const CommandResult up = run_command(std::string(DICE_CLUSTER_EXE) + " up " + DICE_SOURCE_DIR +
                                       "/configs/toy.yaml" + args);
  ASSERT_EQ(up.rc, 0) << up.output;

  const std::string wait = std::string(DICE_CLUSTER_EXE) + " wait --timeout 780 --state-dir " +
                           quote((dir_ / "state").string());
  Terminal terminal(dir_ / "tmux.sock");
  ASSERT_EQ(terminal.start(wait).rc, 0);
  const std::string screen = terminal.screen_when_done(840);
  terminal.close();
  ASSERT_FALSE(screen.empty()) << "wait did not end within 840 s";
  ASSERT_NE(screen.find("[exit 0]"), std::string::npos) << screen;

  // No logfmt line, and the SFT phase on one line: its final live line.
  EXPECT_EQ(screen.find("msg="), std::string::npos) << screen;
  EXPECT_EQ(screen.find("SFT step"), std::string::npos) << screen;
  EXPECT_EQ(count_of(screen, "SFT  step "), 1u) << screen;
  EXPECT_NE(screen.find("SFT  step 16/16 (100%)"), std::string::npos) << screen;
  // The evaluation as a table: a title, a header and a row for all tasks.
  const std::vector<std::string> lines = lines_of(screen);
  std::size_t title = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("evaluation of eval-sft (policy v1, reward extraction_only)", 0) == 0) {
      title = i;
    }
  }
  ASSERT_LT(title + 3, lines.size()) << screen;
  EXPECT_NE(lines[title + 1].find("level"), std::string::npos) << screen;
  EXPECT_NE(lines[title + 1].find("exec"), std::string::npos) << screen;
  bool all_row = false;
  for (std::size_t i = title + 2; i < lines.size() && lines[i].rfind("  ", 0) == 0; ++i) {
    all_row = all_row || lines[i].rfind("  all ", 0) == 0;
  }
  EXPECT_TRUE(all_row) << screen;
  // The RL phase: its title, the table's header and one row per step.
  EXPECT_EQ(count_of(screen, "phase rl\n"), 1u) << screen;
  EXPECT_EQ(count_of(screen, "   1/2 "), 1u) << screen;
  EXPECT_EQ(count_of(screen, "   2/2 "), 1u) << screen;
  EXPECT_NE(screen.find("learner done: 3 steps"), std::string::npos) << screen;
  // A clean end: no worker dead, on the screen or in the learner's log.
  EXPECT_EQ(screen.find("declared dead"), std::string::npos) << screen;
  const CommandResult log =
      run_command(std::string(DICE_CLUSTER_EXE) + " logs learner -n 1000000 --state-dir " +
                  quote((dir_ / "state").string()));
  EXPECT_EQ(log.output.find("declared dead"), std::string::npos) << log.output;
  // The full log keeps every SFT step.
  EXPECT_EQ(count_of(log.output, "msg=\"SFT step "), 16u) << log.output;

  // --log on the same terminal: the log lines as they are.
  Terminal raw(dir_ / "tmux-log.sock");
  ASSERT_EQ(raw.start(wait + " --log").rc, 0);
  const std::string raw_screen = raw.screen_when_done(60);
  ASSERT_NE(raw_screen.find("[exit 0]"), std::string::npos) << raw_screen;
  EXPECT_NE(raw_screen.find("msg=\"SFT step 16/16\""), std::string::npos) << raw_screen;
}

}  // namespace
}  // namespace dice
