// dice-dash's page in a real browser: headless Chromium, driven over the DevTools protocol by
// dice_dash_browser.py, loads the page over a reward log written as a run writes it, sees every
// chart drawn with the points the API returned, sees one more step appear while the page is open
// (this test appends it), sees the first view (the evaluations table, the reward and correct-rate
// charts with one series each and the phases as bands, the per-level toggle), then clicks into a
// candidate and sees its source, its tokens shaded by
// unmask step (each carrying its step) and the task's PyTorch reference; the appended step's
// internal errors flag its row and the run. Skips, saying why, where there is no chromium
// (tools/setup installs it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "tests/tools/dice_dash_test_util.h"

namespace dice::dash {
namespace {

bool chromium_installed() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/snap/bin"}) {
    if (std::filesystem::exists(std::string(dir) + "/chromium")) return true;
  }
  return false;
}

TEST(DiceDashBrowserTest, ChartsDrawUpdateLiveAndACandidateShowsItsSourceTraceAndReference) {
  if (!chromium_installed()) {
    GTEST_SKIP() << "no chromium in /usr/bin: the page is not tested in a browser here "
                    "(tools/setup installs Debian's chromium and python3-websocket)";
  }
  testing_util::TempDir dir("dice-dash-browser-test");
  const std::string log = dir.sub("reward_log");
  auto writer = testing::open_writer(log);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->append({testing::run_record("run-a")}).ok());
  testing::write_steps(*writer, 0, 3);

  testing::DashProcess dash(dir);
  ASSERT_TRUE(dash.start({log}));
  const std::string ready = dir.sub("ready");
  const std::string output = dir.sub("browser.txt");
  std::vector<std::string> args = {DICE_DASH_BROWSER_SCRIPT,
                                   "--url",
                                   "http://127.0.0.1:" + std::to_string(dash.port()),
                                   "--run",
                                   "run-a",
                                   "--steps",
                                   "3",
                                   "--step",
                                   "0",
                                   "--task",
                                   "t1",
                                   "--sample",
                                   "1",
                                   "--source-text",
                                   "t1 sample 1 step 0",
                                   "--reference-text",
                                   "class Model(torch.nn.Module):  # reference of t1",
                                   "--ready-file=" + ready,
                                   "--alert-steps=1"};
  // DICE_DASH_SCREENSHOT=PATH saves the first view there (docs/dice-dash.png is made so).
  if (const char* shot = std::getenv("DICE_DASH_SCREENSHOT"); shot != nullptr && *shot) {
    args.push_back(std::string("--screenshot=") + shot);
  }
  testing_util::ChildProcess browser("/usr/bin/python3", args, output);

  // The script writes `ready` once it has checked the first three steps; then step 3 is
  // appended while the page stays open, one of its four verdicts an internal error (above the
  // alert's share: its row and the run get the alert).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  int exit_code = -1;
  bool appended = false;
  while (std::chrono::steady_clock::now() < deadline && exit_code == -1) {
    if (!appended && std::filesystem::exists(ready)) {
      std::vector<testing::CandidateSpec> faulted = testing::fixture_steps()[0];
      faulted[2].failure = schema::FailureClass::INTERNAL_ERROR;
      EXPECT_TRUE(writer->append(testing::step_records("run-a", 3, 3, false, faulted)).ok());
      appended = true;
    }
    exit_code = browser.wait_exit(std::chrono::milliseconds(50));
  }
  const std::string said = testing::read_text(output);
  if (exit_code == 77) GTEST_SKIP() << said;
  EXPECT_EQ(exit_code, 0) << "the browser check failed:\n"
                          << said << "\ndice-dash:\n"
                          << dash.output();
  EXPECT_TRUE(appended) << said;
  EXPECT_NE(said.find("live: the charts grew to 4 steps"), std::string::npos) << said;
  EXPECT_NE(said.find("candidate t1/1: source shown"), std::string::npos) << said;
  EXPECT_NE(said.find("candidate t1/1: trace of"), std::string::npos) << said;
  EXPECT_NE(said.find("internal errors: steps [3] flagged"), std::string::npos) << said;
  // The first view: a row for the eval step's stage, the phases rl, eval, rl as bands.
  EXPECT_NE(said.find("first view: 1 evaluation rows, one series per chart, bands "
                      "'rl|eval|rl'"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("levels toggle: adds ['level 1', 'level 2'] to both charts"),
            std::string::npos)
      << said;
  ASSERT_TRUE(writer->close().ok());
}

}  // namespace
}  // namespace dice::dash
