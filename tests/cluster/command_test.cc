// Unit tests of run_command (cluster/command.h), the way the slurm backend calls Slurm's clients.
#include "cluster/command.h"

#include <gtest/gtest.h>

namespace dice::cluster {
namespace {

TEST(RunCommandTest, CapturesStdoutStderrAndTheExitStatusApart) {
  Result<CommandResult> r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");

  // More than a pipe's buffer on both streams at once must not deadlock.
  r = run_command({"sh", "-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->out.size(), 300000u);
  EXPECT_EQ(r->err.size(), 200000u);

  r = run_command({"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 128 + 9);
}

TEST(RunCommandTest, AMissingCommandIsNotFoundNamingIt) {
  Result<CommandResult> r = run_command({"no_such_command_dice_xyz", "--version"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("'no_such_command_dice_xyz' not found on PATH"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(command_line({"sbatch", "--parsable", "/x/job.sbatch"}),
            "sbatch --parsable /x/job.sbatch");
}

}  // namespace
}  // namespace dice::cluster
