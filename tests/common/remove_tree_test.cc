#include "common/remove_tree.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace dice {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

TEST(RemoveTreeTest, RemovesNestedFoldersFilesAndLinksWithoutFollowingThem) {
  char root_template[] = "/tmp/dice_remove_tree_XXXXXX";
  char keep_template[] = "/tmp/dice_remove_tree_keep_XXXXXX";
  ASSERT_NE(mkdtemp(root_template), nullptr);
  ASSERT_NE(mkdtemp(keep_template), nullptr);
  const std::string root = root_template, keep = keep_template;
  ASSERT_EQ(mkdir((root + "/a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/a/b").c_str(), 0755), 0);
  std::ofstream(root + "/a/b/file") << "x";
  std::ofstream(root + "/top") << "y";
  std::ofstream(keep + "/precious") << "z";
  ASSERT_EQ(symlink(keep.c_str(), (root + "/a/link").c_str()), 0);

  ASSERT_TRUE(remove_tree(root).ok());
  EXPECT_FALSE(exists(root));
  EXPECT_TRUE(exists(keep + "/precious"));  // the link went, not what it pointed to
  ASSERT_TRUE(remove_tree(keep).ok());
}

TEST(RemoveTreeTest, MissingPathIsFineAndASingleFileIsRemoved) {
  EXPECT_TRUE(remove_tree("/tmp/dice_remove_tree_never_existed_" + std::to_string(getpid())).ok());
  const std::string file = "/tmp/dice_remove_tree_file_" + std::to_string(getpid());
  std::ofstream(file) << "x";
  ASSERT_TRUE(remove_tree(file).ok());
  EXPECT_FALSE(exists(file));
}

TEST(RemoveTreeTest, FailureNamesTheEntry) {
  if (geteuid() == 0) GTEST_SKIP() << "root may delete anything: no permission error to provoke";
  char root_template[] = "/tmp/dice_remove_tree_ro_XXXXXX";
  ASSERT_NE(mkdtemp(root_template), nullptr);
  const std::string root = root_template;
  std::ofstream(root + "/f") << "x";
  ASSERT_EQ(chmod(root.c_str(), 0555), 0);
  Status s = remove_tree(root);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(root + "/f"), std::string::npos) << s.to_string();
  chmod(root.c_str(), 0755);
  EXPECT_TRUE(remove_tree(root).ok());
}

}  // namespace
}  // namespace dice
