// dice-model: policy checkpoints (Hugging Face folders: config.json, safetensors, tokenizer.json).
//
//   dice-model init --shape SHAPE.yaml --tokenizer TOKENIZER.json --out DIR [--seed N]
//                   [--dtype float32|bfloat16]
//       A random-weight model of the shape (configs/models/*.yaml) whose vocabulary is the
//       tokenizer's: vocab_size = the tokenizer's ids rounded up to a multiple of 64, and
//       mask_token_id = its <|MASK|> (an error if it has none). Weights drawn as transformers
//       initialises Qwen3 (normal, std 0.02; norms 1) from --seed (default 1). Writes
//       DIR/config.json, DIR/model.safetensors and a copy of the tokenizer as DIR/tokenizer.json.
//   dice-model tokenizer --source QWEN_TOKENIZER.json --corpus DIR --out TOKENIZER.json
//                        [--text FILE ...]
//       Qwen3's tokenizer pruned to the tokens of a corpus (model/tokenizer/prune.h): every string
//       field of the JSON task and SFT files in DIR (pytorch_code, cuda_code, prefix, middle,
//       suffix, ...) and each --text file (the prompt templates) keep their tokens; the rest of
//       the vocabulary goes. Writes TOKENIZER.json and, beside it, vocab_map.json (the Qwen3 id
//       of each new id), and prints the sizes.
//   dice-model checksum DIR
//       The weights checksum of the checkpoint in DIR (model/checkpoint/weights_checksum.h), as
//       rollout workers report it with every candidate.
//
// Exit codes: 0 done, 1 failure, 2 bad arguments or input (named on stderr).
#include <torch/torch.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/durable_file.h"
#include "common/read_file.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/weights_checksum.h"
#include "model/tokenizer/prune.h"
#include "model/tokenizer/tokenizer.h"
#include "model/weights.h"
#include "options/dice_config.h"

namespace {

namespace fs = std::filesystem;
using dice::read_file;
using dice::Result;
using dice::Status;

constexpr char kUsage[] =
    "usage: dice-model init --shape SHAPE.yaml --tokenizer TOKENIZER.json --out DIR [--seed N] "
    "[--dtype float32|bfloat16]\n"
    "       dice-model tokenizer --source QWEN_TOKENIZER.json --corpus DIR --out TOKENIZER.json "
    "[--text FILE ...]\n"
    "       dice-model checksum DIR\n";

int bad(const std::string& why) {
  std::cerr << "dice-model: " << why << "\n" << kUsage;
  return 2;
}

// A write or read that failed (exit 1), as opposed to bad arguments (exit 2).
int failed(const Status& status) {
  std::cerr << "dice-model: " << status.to_string() << "\n";
  return 1;
}

// --name value pairs after the subcommand (a flag given twice keeps every value, in order); an
// unknown flag or a missing value is an error.
Result<std::multimap<std::string, std::string>> parse_flags(int argc, char** argv,
                                                            const std::vector<std::string>& known) {
  std::multimap<std::string, std::string> flags;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (std::find(known.begin(), known.end(), flag) == known.end()) {
      return Status::invalid_argument("unknown argument '" + flag + "'");
    }
    if (i + 1 >= argc) return Status::invalid_argument(flag + " needs a value");
    flags.emplace(flag, argv[++i]);
  }
  return flags;
}

std::string value_of(const std::multimap<std::string, std::string>& flags,
                     const std::string& flag) {
  auto it = flags.find(flag);
  return it == flags.end() ? "" : it->second;
}

// Every string field of the objects in the JSON arrays of `dir`'s *.json files.
Result<std::vector<std::string>> corpus_texts(const std::string& dir) {
  std::vector<std::string> texts;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  if (ec) return Status::not_found("--corpus " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    DICE_ASSIGN_OR_RETURN(std::string text, read_file(file.string()));
    boost::system::error_code error;
    const boost::json::value root = boost::json::parse(text, error);
    if (error)
      return Status::invalid_argument(file.string() + ": not JSON (" + error.message() + ")");
    if (!root.is_array()) continue;  // MANIFEST.json and the like
    for (const auto& item : root.get_array()) {
      if (!item.is_object()) continue;
      for (const auto& field : item.get_object()) {
        if (field.value().is_string()) texts.emplace_back(field.value().get_string());
      }
    }
  }
  if (texts.empty()) return Status::invalid_argument("--corpus " + dir + ": no task or SFT text");
  return texts;
}

int prune(int argc, char** argv) {
  auto flags = parse_flags(argc, argv, {"--source", "--corpus", "--out", "--text"});
  if (!flags.ok()) return bad(flags.status().message());
  for (const char* required : {"--source", "--corpus", "--out"}) {
    if (!flags->count(required)) return bad(std::string(required) + " is required");
  }
  auto source = read_file(value_of(*flags, "--source"));
  if (!source.ok()) return bad(source.status().message());
  auto texts = corpus_texts(value_of(*flags, "--corpus"));
  if (!texts.ok()) return bad(texts.status().message());
  auto range = flags->equal_range("--text");
  for (auto it = range.first; it != range.second; ++it) {
    auto text = read_file(it->second);
    if (!text.ok()) return bad(text.status().message());
    texts->push_back(std::move(text).value());
  }
  auto pruned =
      dice::tokenizer::prune_tokenizer(source.value(), value_of(*flags, "--source"), texts.value(),
                                       {"<|endoftext|>", "<|im_start|>", "<|im_end|>"});
  if (!pruned.ok()) return bad(pruned.status().message());
  const fs::path out = value_of(*flags, "--out");
  std::error_code ec;
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  if (ec)
    return failed(
        Status::io_error("cannot create " + out.parent_path().string() + ": " + ec.message()));
  boost::json::array map;
  for (std::int32_t id : pruned->source_ids) map.push_back(id);
  // Durable and whole, or not at all: a run reads these later, and a full disk must not leave a
  // short tokenizer behind an exit status of 0.
  Status written = dice::write_file_atomically(out.string(), pruned->json);
  if (written.ok()) {
    written = dice::write_file_atomically(
        (out.parent_path() / "vocab_map.json").string(),
        boost::json::serialize(boost::json::object{{"source", value_of(*flags, "--source")},
                                                   {"source_id_of", std::move(map)}}));
  }
  if (!written.ok()) return failed(written);
  std::cout << "dice-model: wrote " << out.string() << ": " << pruned->source_ids.size()
            << " tokens kept of the source's, from " << texts->size() << " texts\n";
  return 0;
}

// The model's config.json fields from the shape, with the tokenizer's vocabulary.
Result<dice::ModelConfig> config_for(const dice::ModelShape& shape,
                                     const dice::tokenizer::Tokenizer& tokenizer,
                                     const std::string& dtype) {
  const std::optional<std::int32_t> mask = tokenizer.token_id(dice::tokenizer::kMaskToken);
  if (!mask) {
    return Status::invalid_argument(std::string("the tokenizer has no ") +
                                    dice::tokenizer::kMaskToken + " token");
  }
  dice::ModelConfig c;
  c.vocab_size = (static_cast<std::int64_t>(tokenizer.vocab_size()) + 63) / 64 * 64;
  c.hidden_size = shape.hidden_size;
  c.intermediate_size = shape.intermediate_size;
  c.num_hidden_layers = shape.num_hidden_layers;
  c.num_attention_heads = shape.num_attention_heads;
  c.num_key_value_heads = shape.num_key_value_heads;
  c.head_dim = shape.head_dim;
  c.rms_norm_eps = shape.rms_norm_eps;
  c.rope_theta = shape.rope_theta;
  c.max_position_embeddings = shape.max_position_embeddings;
  c.tie_word_embeddings = shape.tie_word_embeddings;
  c.block_size = shape.block_size;
  c.mask_token_id = *mask;
  c.dtype = dtype;
  DICE_RETURN_IF_ERROR(c.validate("the model shape"));
  return c;
}

int init(int argc, char** argv) {
  auto flags = parse_flags(argc, argv, {"--shape", "--tokenizer", "--out", "--seed", "--dtype"});
  if (!flags.ok()) return bad(flags.status().message());
  for (const char* required : {"--shape", "--tokenizer", "--out"}) {
    if (!flags->count(required)) return bad(std::string(required) + " is required");
  }
  const std::string dtype = flags->count("--dtype") ? value_of(*flags, "--dtype") : "float32";
  if (dtype != "float32" && dtype != "bfloat16") {
    return bad("--dtype must be float32 or bfloat16, got '" + dtype + "'");
  }
  std::uint64_t seed = 1;
  if (flags->count("--seed")) {
    try {
      seed = std::stoull(value_of(*flags, "--seed"));
    } catch (const std::exception&) {
      return bad("--seed must be a non-negative integer, got '" + value_of(*flags, "--seed") + "'");
    }
  }
  auto shape = dice::load_model_shape(value_of(*flags, "--shape"));
  if (!shape.ok()) return bad(shape.status().message());
  auto tokenizer = dice::tokenizer::Tokenizer::load(value_of(*flags, "--tokenizer"));
  if (!tokenizer.ok()) return bad(tokenizer.status().message());
  auto config = config_for(shape.value(), tokenizer.value(), dtype);
  if (!config.ok()) return bad(config.status().message());

  torch::manual_seed(seed);
  dice::Qwen3LM lm(config.value(),
                   c10::TensorOptions().dtype(dtype == "bfloat16" ? at::kBFloat16 : at::kFloat));
  const std::string out = value_of(*flags, "--out");
  Status saved = dice::save_qwen3_lm(*lm, out);
  if (saved.ok()) {
    auto tokenizer_text = read_file(value_of(*flags, "--tokenizer"));
    saved = tokenizer_text.ok() ? dice::write_file_atomically(
                                      (fs::path(out) / "tokenizer.json").string(), *tokenizer_text)
                                : tokenizer_text.status();
  }
  if (!saved.ok()) return failed(saved);
  std::int64_t parameters = 0;
  for (const auto& p : lm->parameters()) parameters += p.numel();
  std::cout << "dice-model: wrote " << out << ": " << parameters << " parameters, vocabulary "
            << config->vocab_size << " (tokenizer " << tokenizer->vocab_size() << "), mask id "
            << config->mask_token_id << ", seed " << seed << "\n";
  return 0;
}

int checksum(int argc, char** argv) {
  if (argc != 3) return bad("checksum takes one folder");
  auto checkpoint = dice::Checkpoint::open(argv[2]);
  if (!checkpoint.ok()) return bad(checkpoint.status().to_string());
  std::cout << dice::checksum_hex(dice::weights_checksum(checkpoint.value())) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return bad("no command");
  const std::string command = argv[1];
  if (command == "init") return init(argc, argv);
  if (command == "checksum") return checksum(argc, argv);
  if (command == "tokenizer") return prune(argc, argv);
  if (command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  return bad("unknown command '" + command + "'");
}
