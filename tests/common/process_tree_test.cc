#include "common/process_tree.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "tests/common/forked_family.h"

namespace dice {
namespace {

bool holds(const std::vector<pid_t>& pids, pid_t pid) {
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

TEST(ProcessTreeTest, ListsTheRootFirstThenChildrenAndGrandchildren) {
  ForkedFamily family;
  ASSERT_GT(family.child, 0);
  ASSERT_GT(family.grandchild, 0);
  const std::vector<pid_t> tree = process_tree(family.child);
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(tree.front(), family.child);
  EXPECT_TRUE(holds(tree, family.grandchild));
  EXPECT_FALSE(holds(tree, getpid()));  // the parent is not part of the child's tree
  EXPECT_TRUE(holds(process_tree(getpid()), family.grandchild));
}

TEST(ProcessTreeTest, AProcessThatEndedHasNoTree) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(process_tree(child).empty());
}

}  // namespace
}  // namespace dice
