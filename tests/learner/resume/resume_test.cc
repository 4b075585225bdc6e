// What a resume reads back: the run position survives its JSON form, a damaged position.json is
// an error naming the file and the field, the resume folder is swapped in whole (a crash between
// the renames leaves the old one readable), and an edited curriculum is compared phase by phase.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "common/disk_space.h"
#include "common/durable_file.h"
#include "common/remove_tree.h"
#include "learner/resume/resume_plan.h"
#include "learner/resume/resume_store.h"
#include "learner/resume/run_position.h"
#include "tests/common/fixed_free_space_file_system.h"
#include "tests/common/recording_file_system.h"
#include "tests/support/small_tmpfs.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

RunPosition sample_position() {
  RunPosition p;
  p.run_id = "r-7";
  p.next_step = (std::uint64_t{1} << 40) + 3;  // beyond 32 bits
  p.policy_version = 12;
  p.weights_dir = "ck/r-7/policy-v12";
  p.next_work_id = 901;
  p.next_group_id = 77;
  p.steps_completed = 14;
  p.seconds_so_far = 123.5;
  p.phases_done = {"sft", "look"};
  p.phase = "e2e";
  p.phase_steps_done = 3;
  p.has_scheduler = true;
  p.scheduler.next_task = {"t4", ""};
  p.scheduler.open = 2;
  p.scheduler.recent = {{"1", {true, false, true}}, {"2", {}}};
  p.scheduler.history = {{"t1", {{1, 4}, {0, 4}}}};
  p.scheduler.last_taken = {{"t1", 7}, {"t4", 3}};
  p.seed = 0xfedcba9876543210ull;
  p.resumes = 2;
  p.phases = {{"sft", "sft", 3, 11, 0}, {"e2e", "rl", 40, 0xffffffffffffffffull, 128}};
  return p;
}

TEST(RunPositionTest, SurvivesItsJsonForm) {
  const RunPosition p = sample_position();
  auto back = run_position_from_json(run_position_to_json(p), "position.json");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->run_id, p.run_id);
  EXPECT_EQ(back->next_step, p.next_step);
  EXPECT_EQ(back->policy_version, 12u);
  EXPECT_EQ(back->weights_dir, p.weights_dir);
  EXPECT_EQ(back->next_work_id, 901u);
  EXPECT_EQ(back->next_group_id, 77u);
  EXPECT_EQ(back->steps_completed, 14);
  EXPECT_DOUBLE_EQ(back->seconds_so_far, 123.5);
  EXPECT_EQ(back->phases_done, p.phases_done);
  EXPECT_EQ(back->phase, "e2e");
  EXPECT_EQ(back->phase_steps_done, 3);
  EXPECT_TRUE(back->has_scheduler);
  EXPECT_EQ(back->scheduler.next_task, p.scheduler.next_task);
  EXPECT_EQ(back->scheduler.open, 2);
  EXPECT_EQ(back->scheduler.recent, p.scheduler.recent);
  EXPECT_EQ(back->scheduler.history, p.scheduler.history);
  EXPECT_EQ(back->scheduler.last_taken, p.scheduler.last_taken);
  EXPECT_EQ(back->seed, p.seed);  // all 64 bits
  EXPECT_EQ(back->resumes, 2);
  ASSERT_EQ(back->phases.size(), 2u);
  EXPECT_EQ(back->phases[1].tasks_digest, 0xffffffffffffffffull);
  EXPECT_EQ(back->phases[1].tasks, 128);
}

TEST(RunPositionTest, ADamagedFileIsAnErrorNamingTheFileAndTheField) {
  auto not_json = run_position_from_json("{\"format\": 1,", "ck/resume/position.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(not_json.status().message().find("ck/resume/position.json:1:"), std::string::npos)
      << not_json.status().to_string();

  std::string text = run_position_to_json(sample_position());
  const std::string field = "\"next_step\":";
  text.replace(text.find(field), field.size(), "\"next_step\":\"soon\",\"x\":");
  auto mistyped = run_position_from_json(text, "p.json");
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(
      mistyped.status().message().find("p.json: \"next_step\" must be a non-negative integer"),
      std::string::npos)
      << mistyped.status().to_string();

  auto other_format = run_position_from_json("{\"format\": 9}", "p.json");
  ASSERT_FALSE(other_format.ok());
  EXPECT_NE(other_format.status().message().find("format 9"), std::string::npos);
}

// A resume folder's fill that writes `bytes` bytes of optimizer state, through write_all (a full
// disk's ENOSPC comes back as its error).
std::function<Status(const std::string&)> fill_bytes(std::size_t bytes) {
  return [bytes](const std::string& dir) -> Status {
    const std::string path = dir + "/optimizer.pt";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::io_error(path + ": cannot create");
    const std::string state(bytes, 'm');
    Status written = write_all(fd, state.data(), state.size(), path);
    ::close(fd);
    return written;
  };
}

class ResumeStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dice_resume_store_" + std::to_string(::getpid()));
    ASSERT_TRUE(remove_tree(dir_).ok());
    fs::create_directories(dir_);
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }
  fs::path dir_;
};

TEST_F(ResumeStoreTest, ANewFolderReplacesTheOldOneWhole) {
  EXPECT_EQ(read_resume(dir_.string()).status().code(), StatusCode::kNotFound);
  RunPosition p = sample_position();
  auto fill = [](const std::string& step) {
    return [step](const std::string& dir) {
      std::ofstream(dir + "/weights.txt") << step;
      return Status::ok_status();
    };
  };
  ASSERT_TRUE(write_resume(dir_.string(), p, fill("one")).ok());
  p.next_step = 5;
  ASSERT_TRUE(write_resume(dir_.string(), p, fill("two")).ok());
  auto point = read_resume(dir_.string());
  ASSERT_TRUE(point.ok()) << point.status().to_string();
  EXPECT_EQ(point->position.next_step, 5u);
  std::ifstream weights(point->dir + "/weights.txt");
  std::string text;
  weights >> text;
  EXPECT_EQ(text, "two");
  EXPECT_FALSE(fs::exists(dir_ / "resume.old"));
  EXPECT_FALSE(fs::exists(dir_ / "resume.partial"));

  // A fill that fails leaves the last complete folder in place.
  p.next_step = 6;
  Status failed = write_resume(
      dir_.string(), p, [](const std::string&) { return Status::io_error("disk full (test)"); });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(read_resume(dir_.string())->position.next_step, 5u);
}

TEST_F(ResumeStoreTest, ACrashBetweenTheRenamesLeavesTheOldFolderReadable) {
  RunPosition p = sample_position();
  p.next_step = 8;
  ASSERT_TRUE(write_resume(dir_.string(), p, nullptr).ok());
  // As if the writer died after "resume -> resume.old" and before "resume.partial -> resume".
  fs::rename(dir_ / "resume", dir_ / "resume.old");
  fs::create_directories(dir_ / "resume.partial");
  auto point = read_resume(dir_.string());
  ASSERT_TRUE(point.ok()) << point.status().to_string();
  EXPECT_EQ(point->position.next_step, 8u);
  EXPECT_EQ(fs::path(point->dir).filename(), "resume.old");
  // The next write takes over cleanly.
  p.next_step = 9;
  ASSERT_TRUE(write_resume(dir_.string(), p, nullptr).ok());
  EXPECT_EQ(read_resume(dir_.string())->position.next_step, 9u);
  EXPECT_FALSE(fs::exists(dir_ / "resume.old"));
}

// What reaches the disk in which order: every file of the new folder (the weights and the
// optimizer state, whose writers do not sync, and position.json) before the folder is renamed
// into place, the renames before the base folder's sync, and resume.old still there at that sync:
// until the renames are on the disk, a power loss may bring back the folder as it was before.
TEST_F(ResumeStoreTest, TheNewFolderIsOnTheDiskBeforeTheOldOneGoes) {
  RunPosition p = sample_position();
  const std::string base = dir_.string();
  ASSERT_TRUE(write_resume(base, p, nullptr).ok());
  testing_util::RecordingFileSystem recorder;
  bool old_kept_at_sync = false;
  recorder.before_call = [&](const std::string& call) {
    if (call == "fsync " + base && !old_kept_at_sync) {
      old_kept_at_sync = fs::exists(dir_ / "resume.old");
    }
  };
  p.next_step = 5;
  Status written = write_resume(
      base, p,
      [](const std::string& dir) {
        fs::create_directories(dir + "/model");
        std::ofstream(dir + "/model/model.safetensors") << "weights";
        std::ofstream(dir + "/optimizer.pt") << "moments";
        return Status::ok_status();
      },
      /*min_free_bytes=*/0, recorder);
  ASSERT_TRUE(written.ok()) << written.to_string();
  const std::vector<std::string>& calls = recorder.calls;
  auto at = [&](const std::string& call) {
    return static_cast<std::size_t>(std::find(calls.begin(), calls.end(), call) - calls.begin());
  };
  const std::string partial = base + "/resume.partial";
  const std::string current = base + "/resume";
  const std::size_t swap_in = at("rename " + partial + " " + current);
  ASSERT_LT(swap_in, calls.size()) << ::testing::PrintToString(calls);
  for (const std::string& entry : {partial + "/model/model.safetensors", partial + "/optimizer.pt",
                                   partial + "/position.json", partial + "/model", partial}) {
    EXPECT_LT(at("fsync " + entry), swap_in) << entry << " not synced before the swap";
  }
  EXPECT_LT(at("rename " + current + " " + base + "/resume.old"), swap_in);
  EXPECT_LT(swap_in, at("fsync " + base)) << ::testing::PrintToString(calls);
  EXPECT_TRUE(old_kept_at_sync) << "resume.old went before the renames were on the disk";
  EXPECT_FALSE(fs::exists(dir_ / "resume.old"));
  EXPECT_EQ(read_resume(base)->position.next_step, 5u);
}

PhasePlan rl_phase(const std::string& name, int steps, const std::vector<std::string>& ids) {
  PhasePlan plan;
  plan.name = name;
  plan.type = PhaseType::kRl;
  plan.steps = steps;
  for (const std::string& id : ids) {
    LearnerTask task;
    task.id = id;
    plan.tasks.push_back(task);
  }
  return plan;
}

TEST(ResumePlanTest, AnUnchangedCurriculumGoesOnWhereItStopped) {
  const std::vector<PhasePlan> plans = {rl_phase("infill", 4, {"a", "b"}),
                                        rl_phase("e2e", 6, {"c"})};
  RunPosition p;
  for (const PhasePlan& plan : plans) p.phases.push_back(phase_fingerprint(plan));
  p.phases_done = {"infill"};
  p.phase = "e2e";
  p.phase_steps_done = 2;
  const ResumePlan r = plan_resume(p, plans);
  EXPECT_EQ(r.done, (std::vector<bool>{true, false}));
  EXPECT_EQ(r.current, 1);
  EXPECT_EQ(r.steps_done, 2);
  EXPECT_TRUE(r.changes.empty());
}

TEST(ResumePlanTest, EachEditOfTheCurriculumIsNamed) {
  const std::vector<PhasePlan> before = {rl_phase("infill", 4, {"a", "b"}),
                                         rl_phase("e2e", 6, {"c"}), rl_phase("old", 1, {"x"})};
  RunPosition p;
  for (const PhasePlan& plan : before) p.phases.push_back(phase_fingerprint(plan));
  p.phases_done = {"infill", "old"};
  p.phase = "e2e";
  p.phase_steps_done = 5;
  const std::vector<PhasePlan> after = {rl_phase("infill", 4, {"a", "b"}),
                                        rl_phase("e2e", 3, {"c", "d"}), rl_phase("new", 2, {"y"})};
  const ResumePlan r = plan_resume(p, after);
  EXPECT_EQ(r.done, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(r.current, 1);
  std::string all;
  for (const std::string& c : r.changes) all += c + "\n";
  EXPECT_NE(all.find("phase \"old\" is done and no longer in the curriculum"), std::string::npos)
      << all;
  EXPECT_NE(all.find("phase \"e2e\": 5 steps done, it now has 3: it is complete"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("phase \"e2e\": steps 6 -> 3"), std::string::npos) << all;
  EXPECT_NE(all.find("phase \"e2e\": its tasks changed (1 -> 2 tasks)"), std::string::npos) << all;
  EXPECT_NE(all.find("phase \"new\" is new"), std::string::npos) << all;
  EXPECT_EQ(r.changes.size(), 5u) << all;
}

// A new folder needs about as much room as the current one (the same model and optimizer): one
// that would not fit with run.min_free_disk_mb to spare is refused before it is made, naming the
// folder and the bytes, and the current folder stays.
TEST_F(ResumeStoreTest, AFolderThatWouldNotFitIsRefusedAndTheCurrentOneStays) {
  RunPosition p = sample_position();
  p.next_step = 5;
  const std::string base = dir_.string();
  ASSERT_TRUE(write_resume(base, p, fill_bytes(64 * 1024)).ok());
  p.next_step = 6;
  testing_util::FixedFreeSpaceFileSystem small_disk(8);  // 32 KiB
  const Status refused = write_resume(base, p, fill_bytes(64 * 1024), 0, small_disk);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(base + "/resume.partial: not enough free disk space for the "
                                          "resume folder: it needs "),
            std::string::npos)
      << refused.to_string();
  EXPECT_NE(refused.message().find("32768 bytes are free"), std::string::npos)
      << refused.to_string();
  EXPECT_FALSE(fs::exists(dir_ / "resume.partial"));
  EXPECT_EQ(read_resume(base)->position.next_step, 5u);

  testing_util::FixedFreeSpaceFileSystem large_disk(std::uint64_t{1} << 20);  // 4 GiB
  EXPECT_FALSE(write_resume(base, p, fill_bytes(64 * 1024), 4096 * kBytesPerMiB, large_disk).ok());
  EXPECT_EQ(read_resume(base)->position.next_step, 5u);
  ASSERT_TRUE(write_resume(base, p, fill_bytes(64 * 1024), kBytesPerMiB, large_disk).ok());
  EXPECT_EQ(read_resume(base)->position.next_step, 6u);
}

// A real disk that fills while the new folder is written (its optimizer state is larger than the
// one before): the write fails with the disk's error, resume.partial is removed (its space is the
// run's), and the last complete folder is read back. A 2 MiB tmpfs (needs root; skipped without).
TEST(ResumeStoreFullDiskTest, ADiskThatFillsMidWriteKeepsTheLastFolder) {
  testing_util::SmallTmpfs disk(2048);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  const std::string base = disk.sub("r1");
  RunPosition p = sample_position();
  p.next_step = 5;
  ASSERT_TRUE(write_resume(base, p, fill_bytes(256 * 1024)).ok());
  auto free_before = free_disk_bytes(base);
  ASSERT_TRUE(free_before.ok()) << free_before.status().to_string();

  p.next_step = 6;
  const Status failed = write_resume(base, p, fill_bytes(3 * 1024 * 1024));
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(is_disk_space_shortage(failed)) << failed.to_string();
  EXPECT_NE(failed.message().find(base + "/resume.partial/optimizer.pt"), std::string::npos)
      << failed.to_string();
  EXPECT_FALSE(fs::exists(base + "/resume.partial"));
  EXPECT_EQ(*free_disk_bytes(base), *free_before);
  auto point = read_resume(base);
  ASSERT_TRUE(point.ok()) << point.status().to_string();
  EXPECT_EQ(point->position.next_step, 5u);
  EXPECT_EQ(fs::file_size(point->dir + "/optimizer.pt"), 256u * 1024);
}

}  // namespace
}  // namespace dice
