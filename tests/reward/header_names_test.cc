// HeaderNames over files of its own (no compiler): every identifier of every file under the
// folders and of the listed files, through symlinks, each folder once; and the make rule that
// `g++ -M` prints.
#include "reward/compile/header_names.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

TEST(HeaderNamesTest, EveryIdentifierOfEveryFileIsANameWhateverItsScope) {
  testing_util::TempDir dir("dice-header-names");
  write(dir.sub("include/torch/extension.h"),
        "#pragma once\n#define TORCH_CHECK(cond, ...) dice_check_impl(cond)\n"
        "namespace at { class Tensor; inline int numel_of(int idx) { return idx * 2; } }\n"
        "#if defined(__CUDACC__)\n__device__ float device_only_helper(float);\n#endif\n"
        "const char* s = \"string_word\"; float f = 1e10f + 0x1Fu;\n");
  write(dir.sub("include/ATen/ATen.h"), "struct AtenThing;\n");
  write(dir.sub("system/vector"), "namespace std { template <class T> class vector; }\n");
  // A symlink back up the tree: the walk enters each folder once and ends.
  fs::create_directory_symlink(dir.sub("include"), dir.sub("include/ATen/loop"));
  const HeaderNames names =
      HeaderNames::read({dir.sub("include")}, {dir.sub("system/vector"), dir.sub("missing.h")});
  for (const char* name :
       {"TORCH_CHECK", "dice_check_impl", "Tensor", "numel_of", "idx", "device_only_helper",
        "__CUDACC__", "string_word", "AtenThing", "vector", "std"}) {
    EXPECT_TRUE(names.may_declare(name)) << name;
  }
  // A number's suffix is no name; nor is anything the files do not spell.
  for (const char* name : {"e10f", "x1Fu", "f1", "expm1ff", "fmaxf_cudav"}) {
    EXPECT_FALSE(names.may_declare(name)) << name;
  }
  EXPECT_EQ(names.unread(), 1u);  // missing.h
  EXPECT_EQ(names.files(), 3u);   // each file once, though the loop reaches them again
  EXPECT_TRUE(names.has_header("torch/extension.h"));
  EXPECT_TRUE(names.has_header("ATen/ATen.h"));
  EXPECT_TRUE(names.has_header("vector"));
  EXPECT_FALSE(names.has_header("extension.h/x"));
  EXPECT_FALSE(names.has_header("cuda_fp16.h"));
  EXPECT_FALSE(names.has_header("orch/extension.h"));  // a whole path part, not a tail of one
  EXPECT_FALSE(names.has_header(""));
}

TEST(HeaderNamesTest, CommentsSpellNoNamesAndLiteralsOpenNoComments) {
  testing_util::TempDir dir("dice-header-names");
  write(dir.sub("include/prose.h"),
        "// line_comment_word\n"
        "/* block_comment_word\n   second_line_word */ int after_block_name;\n"
        "const char* url = \"http://url_word\"; int after_url_name;\n"
        "const char* q = \"a \\\" /* quoted_word\"; int after_quote_name;\n"
        "const char* raw = R\"x(a \" */ \" /* raw_word )x\"; int after_raw_name;\n"
        "char c = '\"'; int after_char_name; char d = '/'; char e = '*';\n"
        "#error don't apostrophe_word\n"
        "int million = 1'000'000; int after_separator_name;\n"
        "// spliced \\\nspliced_comment_word\n"
        "int after_splice_name; /* unclosed_word");
  const HeaderNames names = HeaderNames::read({dir.sub("include")}, {});
  for (const char* name : {"after_block_name", "url_word", "after_url_name", "quoted_word",
                           "after_quote_name", "raw_word", "after_raw_name", "after_char_name",
                           "after_separator_name", "after_splice_name", "million"}) {
    EXPECT_TRUE(names.may_declare(name)) << name;
  }
  for (const char* name : {"line_comment_word", "block_comment_word", "second_line_word",
                           "spliced_comment_word", "unclosed_word", "000"}) {
    EXPECT_FALSE(names.may_declare(name)) << name;
  }
  // The rest of a line after a lone quote holds no declaration: only it is at stake.
  EXPECT_TRUE(names.may_declare("don"));
}

TEST(HeaderNamesTest, MakeRulePrerequisitesAreTheFilesAfterTheTarget) {
  EXPECT_EQ(make_rule_prerequisites("probe.o: probe.cpp /usr/include/a.h \\\n"
                                    " /opt/torch/include/torch/extension.h \\\n"
                                    "  /usr/include/with\\ space.h\n"),
            (std::vector<std::string>{"probe.cpp", "/usr/include/a.h",
                                      "/opt/torch/include/torch/extension.h",
                                      "/usr/include/with space.h"}));
  EXPECT_EQ(make_rule_prerequisites("probe.o : a.h"), std::vector<std::string>{"a.h"});
  EXPECT_TRUE(make_rule_prerequisites("").empty());
}

}  // namespace
}  // namespace dice
