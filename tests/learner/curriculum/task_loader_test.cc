// Task files and prompt templates: the real DICE release files (skipped, saying so, when absent)
// and small bad files written by the test.
#include "learner/curriculum/task_loader.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

// <repo>/data/dice-rl, or $DICE_DATA.
std::string data_dir() {
  if (const char* env = std::getenv("DICE_DATA")) return env;
  return (fs::path(DICE_SOURCE_DIR) / "data" / "dice-rl").string();
}

class TaskLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dice_task_loader_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  PromptTemplate builtin(TaskKind kind) {
    auto t = PromptTemplate::builtin(kind);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return t.value();
  }
  fs::path dir_;
};

TEST_F(TaskLoaderTest, LoadsRealEndToEndFileInLevelOrder) {
  const std::string file = data_dir() + "/end_to_end_kernel_generation_4000.json";
  if (!fs::exists(file)) GTEST_SKIP() << "no DICE data at " << file << " (set DICE_DATA)";
  CurriculumPhase phase;
  phase.name = "e2e";
  phase.kind = TaskKind::kEndToEnd;
  phase.task_files = {file};
  phase.level_order = {"0", "1", "2", "3"};
  std::map<TaskKind, PromptTemplate> prompts;
  prompts.emplace(TaskKind::kEndToEnd, builtin(TaskKind::kEndToEnd));
  auto tasks = load_phase_tasks(phase, prompts);
  ASSERT_TRUE(tasks.ok()) << tasks.status().to_string();
  ASSERT_EQ(tasks->size(), 4000u);
  int level = 0;
  std::size_t at_level_1 = 0;
  std::set<std::string> ids;
  for (const LearnerTask& t : *tasks) {
    EXPECT_GE(t.level_number, level) << t.origin;  // easy to hard
    level = t.level_number;
    at_level_1 += t.level == "1";
    ids.insert(t.id);
    EXPECT_NE(t.prompt.find(t.reference_source), std::string::npos) << t.origin;
    EXPECT_EQ(t.prompt.find("{reference}"), std::string::npos);
    EXPECT_TRUE(t.infill_prefix.empty());
  }
  EXPECT_EQ(at_level_1, 590u);  // REFERENCE.md section 7
  EXPECT_EQ(ids.size(), 4000u);
  // File order within a level: the first level-0 task is the file's first one (idx 0).
  EXPECT_EQ(tasks->front().id, "0");

  capnp::MallocMessageBuilder message;
  auto task = message.initRoot<schema::Task>();
  fill_task(tasks->back(), task);
  EXPECT_EQ(task.getPhase(), schema::Phase::E2E);
  EXPECT_EQ(task.getLevel(), 3);
  EXPECT_EQ(std::string(task.getId().cStr()), tasks->back().id);
}

TEST_F(TaskLoaderTest, LoadsRealInfillFileWithSkeleton) {
  const std::string file = data_dir() + "/kernel_infilling_dev.json";
  if (!fs::exists(file)) GTEST_SKIP() << "no DICE data at " << file << " (set DICE_DATA)";
  auto tasks = load_task_file(file, TaskKind::kInfill, builtin(TaskKind::kInfill));
  ASSERT_TRUE(tasks.ok()) << tasks.status().to_string();
  ASSERT_EQ(tasks->size(), 60u);
  EXPECT_EQ(tasks->front().id, "6995");
  for (const LearnerTask& t : *tasks) {
    EXPECT_FALSE(t.infill_suffix.empty()) << t.origin;
    EXPECT_EQ(t.level, "");  // the release's infill tasks carry no level
    // The skeleton appears in the prompt with the hole marked between prefix and suffix.
    EXPECT_NE(t.prompt.find(t.infill_prefix + "<<<MISSING CORE>>>" + t.infill_suffix),
              std::string::npos)
        << t.origin;
  }
  capnp::MallocMessageBuilder message;
  auto task = message.initRoot<schema::Task>();
  fill_task(tasks->front(), task);
  EXPECT_EQ(task.getPhase(), schema::Phase::INFILL);
  EXPECT_EQ(std::string(task.getInfillPrefix().cStr()), tasks->front().infill_prefix);
}

TEST_F(TaskLoaderTest, BadFilesNameFileIndexAndProblem) {
  const PromptTemplate e2e = builtin(TaskKind::kEndToEnd);
  const PromptTemplate infill = builtin(TaskKind::kInfill);
  struct Case {
    std::string text;
    TaskKind kind;
    std::string expected;
  };
  const Case cases[] = {
      {"[{\"idx\": 1, \"pytorch_code\": \"x\"},\n {\"idx\": 2}]", TaskKind::kEndToEnd,
       ".json:[1]: missing \"pytorch_code\""},
      {"[{\"pytorch_code\": \"x\"}]", TaskKind::kEndToEnd, ":[0]: missing \"id\" (or \"idx\")"},
      {"[{\"id\": -3, \"pytorch_code\": \"x\"}]", TaskKind::kEndToEnd, ":[0]: \"id\" must be"},
      {"[{\"id\": \"a\", \"level\": \"hard\", \"pytorch_code\": \"x\"}]", TaskKind::kEndToEnd,
       ":[0]: \"level\" must be 0..255"},
      {"[{\"id\": \"a\", \"pytorch_code\": 7}]", TaskKind::kEndToEnd,
       ":[0]: \"pytorch_code\" must be a string"},
      {"[{\"id\": \"a\", \"pytorch_code\": \"x\", \"prefix\": \"p\"}]", TaskKind::kInfill,
       ":[0]: missing \"suffix\""},
      {"[3]", TaskKind::kEndToEnd, ":[0]: a task must be a JSON object"},
      {"{\"id\": 1}", TaskKind::kEndToEnd, "expected a JSON array of tasks"},
      {"[\n  {\"id\": 1,,}\n]", TaskKind::kEndToEnd, ".json:2:"},  // line of the syntax error
      {"[{\"id\": \"a\", \"pytorch_code\": \"x\", \"shape_variants\": [{\"n\": \"3\"}]}]",
       TaskKind::kEndToEnd, ":[0]: shape_variants[0]: \"n\" must be an integer"},
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string path = write("bad" + std::to_string(n++) + ".json", c.text);
    auto loaded = load_task_file(path, c.kind, c.kind == TaskKind::kInfill ? infill : e2e);
    ASSERT_FALSE(loaded.ok()) << c.text;
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(loaded.status().message().find(path), std::string::npos)
        << loaded.status().to_string();
    EXPECT_NE(loaded.status().message().find(c.expected), std::string::npos)
        << "want '" << c.expected << "' in: " << loaded.status().to_string();
  }
  auto missing = load_task_file((dir_ / "nope.json").string(), TaskKind::kEndToEnd, e2e);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// A task's other shapes travel from its file into the Task message the reward worker judges.
TEST_F(TaskLoaderTest, ShapeVariantsReachTheTaskMessage) {
  const std::string path = write("shapes.json", R"([{"id": "relu-1", "pytorch_code": "x",
      "shape_variants": [{"batch_size": 3}, {"batch_size": 1, "dim": 129}]}])");
  auto tasks = load_task_file(path, TaskKind::kEndToEnd, builtin(TaskKind::kEndToEnd));
  ASSERT_TRUE(tasks.ok()) << tasks.status().to_string();
  capnp::MallocMessageBuilder message;
  auto task = message.initRoot<schema::Task>();
  fill_task(tasks->front(), task);
  EXPECT_EQ(shape_variant_args(task.asReader()),
            (std::vector<std::string>{"batch_size=3", "batch_size=1,dim=129"}));
}

TEST_F(TaskLoaderTest, DuplicateIdsAndEmptyLevelFilterAreErrors) {
  const std::string a = write("a.json", R"([{"idx": 1, "level": "1", "pytorch_code": "x"}])");
  const std::string b = write("b.json", R"([{"idx": "1", "level": 2, "pytorch_code": "y"}])");
  std::map<TaskKind, PromptTemplate> prompts;
  prompts.emplace(TaskKind::kEndToEnd, builtin(TaskKind::kEndToEnd));
  CurriculumPhase phase;
  phase.name = "p";
  phase.task_files = {a, b};
  auto dup = load_phase_tasks(phase, prompts);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("b.json:[0]: task id \"1\" already used at"),
            std::string::npos)
      << dup.status().to_string();

  phase.task_files = {a};
  phase.level_order = {"3"};
  auto none = load_phase_tasks(phase, prompts);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no task left"), std::string::npos);
}

TEST_F(TaskLoaderTest, LevelOrderFiltersAndSortsStably) {
  std::vector<LearnerTask> tasks(5);
  const char* levels[] = {"2", "1", "3", "2", "1"};
  for (int i = 0; i < 5; ++i) {
    tasks[i].id = std::to_string(i);
    tasks[i].level = levels[i];
  }
  auto ordered = order_by_level(tasks, {"1", "2"});
  std::vector<std::string> ids;
  for (const auto& t : ordered) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "4", "0", "3"}));
  EXPECT_EQ(order_by_level(tasks, {}).size(), 5u);  // empty: file order, nothing left out
}

TEST_F(TaskLoaderTest, BuiltinTemplatesAreTheShippedFiles) {
  for (TaskKind kind : {TaskKind::kInfill, TaskKind::kEndToEnd}) {
    const std::string name = kind == TaskKind::kInfill ? "infill" : "end_to_end";
    const fs::path file = fs::path(DICE_SOURCE_DIR) / "configs" / "prompts" / (name + ".txt");
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, builtin_prompt_text(kind)) << file;
    auto loaded = PromptTemplate::load_file(file.string(), kind);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    PromptFields fields{"REF{x}", "PRE{prefix}", "SUF", "t1"};
    const std::string rendered = loaded->render(fields);
    EXPECT_EQ(rendered, builtin(kind).render(fields));
    EXPECT_NE(rendered.find("REF{x}"), std::string::npos);
    EXPECT_EQ(rendered.find("Placeholders"), std::string::npos);  // the header is not the prompt
  }
}

TEST_F(TaskLoaderTest, TemplatesCheckPlaceholders) {
  auto typo =
      PromptTemplate::parse("# c\n---\nline one\nsee {refrence}\n", TaskKind::kEndToEnd, "t.txt");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("t.txt:4: unknown placeholder {refrence}"),
            std::string::npos)
      << typo.status().to_string();
  auto missing = PromptTemplate::parse("{reference} only", TaskKind::kInfill, "i.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("{prefix} {suffix}"), std::string::npos);
  // Values are inserted once, never re-scanned; other braces stay literal.
  auto ok =
      PromptTemplate::parse("a {reference} {B1} {} {prefix}{suffix}\n\n", TaskKind::kInfill, "x");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->render({"{suffix}", "P", "S", ""}), "a {suffix} {B1} {} PS");

  const std::string path = write("custom.txt", "Task {task_id}: {reference}");
  auto templates = load_prompt_templates({{"end_to_end", path}});
  ASSERT_TRUE(templates.ok()) << templates.status().to_string();
  EXPECT_EQ(templates->at(TaskKind::kEndToEnd).render({"R", "", "", "7"}), "Task 7: R");
  EXPECT_EQ(templates->at(TaskKind::kInfill).origin(), "built-in infill");
  auto broken = load_prompt_templates({{"infill", (dir_ / "absent.txt").string()}});
  EXPECT_EQ(broken.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace dice
