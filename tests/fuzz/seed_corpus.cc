// fuzz_seed_corpus SOURCE_DIR OUT_DIR: writes the seed corpus of every target of tests/fuzz to
// OUT_DIR/<target>/, from the test data the repository already holds, so that the fuzzers start
// from inputs that get deep into each reader instead of rediscovering the formats. Generated at
// run time (tools/fuzz) rather than kept in the repository: the encoded messages follow the
// schemas as they change, and the data files are not copied twice.
//
//   wire            every Envelope body arm and every body type alone (tests/schemas fixtures)
//   config          configs/*.yaml, configs/curriculum/*.yaml, configs/models/*.yaml
//   safetensors     small images made here (the fixture checkpoint is 160 KB, too big a seed)
//   model_config    the fixture checkpoint's config.json
//   tokenizer_json  the tokenizer tests' tokenizer.json
//   tokenizer_text  the prompt templates and a chat turn, each both ways, and a few ids
//   extract         responses made of data/dice-rl's infilling items, both phases
//   static_check    the reward tests' honest and cheating candidates
#include <capnp/message.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/json/fields.h"
#include "net/wire/wire.h"
#include "tests/fuzz/wire_fuzz_types.h"
#include "tests/schemas/schema_fixtures.h"
#include "tests/support/shell_command.h"

namespace dice::fuzz {
namespace {

namespace fs = std::filesystem;

using testing_util::read_text;

class SeedWriter {
 public:
  explicit SeedWriter(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  // Each file of `dir` whose name ends in `extension`, after the selector byte `first`.
  void copy_files(const fs::path& dir, const std::string& extension, std::string first = "") {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != extension) continue;
      write(first.empty() ? entry.path().filename().string()
                          : std::to_string(static_cast<unsigned char>(first[0])) + "-" +
                                entry.path().filename().string(),
            first + read_text(entry.path()));
    }
  }

 private:
  fs::path dir_;
};

// One seed of wire_fuzz: the selector byte, then the message `fill` makes.
template <typename T, typename Fill>
void write_message(SeedWriter* out, const std::string& name, WireType type, Fill fill) {
  capnp::MallocMessageBuilder message;
  fill(message.initRoot<T>());
  out->write(name, std::string(1, static_cast<char>(type)) + wire::encode(message));
}

void write_wire(SeedWriter* out) {
  using B = schema::Envelope::Body;
  const B::Which arms[] = {B::HELLO,           B::HEARTBEAT, B::CREDIT,       B::ACK,
                           B::ROLLOUT_REQUEST, B::CANDIDATE, B::EVAL_REQUEST, B::VERDICT,
                           B::WEIGHTS_UPDATE,  B::SHUTDOWN,  B::ERROR,        B::CANCEL};
  for (B::Which arm : arms) {
    write_message<schema::Envelope>(out, "envelope-" + std::to_string(static_cast<int>(arm)),
                                    WireType::kEnvelope,
                                    [&](auto b) { test::fill_envelope(b, 1, arm); });
  }
  const std::uint32_t s = 2;
  using W = WireType;
  write_message<schema::Hello>(out, "hello", W::kHello, [&](auto b) { test::fill_hello(b, s); });
  write_message<schema::Heartbeat>(out, "heartbeat", W::kHeartbeat,
                                   [&](auto b) { test::fill_heartbeat(b, s); });
  write_message<schema::Credit>(out, "credit", W::kCredit,
                                [&](auto b) { test::fill_credit(b, s); });
  write_message<schema::Ack>(out, "ack", W::kAck, [&](auto b) { test::fill_ack(b, s); });
  write_message<schema::RolloutRequest>(out, "rollout-request", W::kRolloutRequest,
                                        [&](auto b) { test::fill_rollout_request(b, s); });
  write_message<schema::Candidate>(out, "candidate", W::kCandidate,
                                   [&](auto b) { test::fill_candidate(b, s); });
  write_message<schema::EvalRequest>(out, "eval-request", W::kEvalRequest,
                                     [&](auto b) { test::fill_eval_request(b, s); });
  write_message<schema::Verdict>(out, "verdict", W::kVerdict,
                                 [&](auto b) { test::fill_verdict(b, s); });
  for (bool nccl : {false, true}) {
    write_message<schema::WeightsUpdate>(out, "weights-update-" + std::to_string(nccl),
                                         W::kWeightsUpdate,
                                         [&](auto b) { test::fill_weights_update(b, s, nccl); });
  }
  write_message<schema::Shutdown>(out, "shutdown", W::kShutdown,
                                  [&](auto b) { test::fill_shutdown(b, s); });
  write_message<schema::Error>(out, "error", W::kError, [&](auto b) { test::fill_error(b, s); });
  write_message<schema::Task>(out, "task", W::kTask, [&](auto b) { test::fill_task(b, s); });
}

// A safetensors image: the header's length, the header, the data.
std::string safetensors_image(std::string header, const std::string& data) {
  while (header.size() % 8 != 0) header += ' ';
  std::string image;
  for (int i = 0; i < 8; ++i) image += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return image + header + data;
}

void write_safetensors(SeedWriter* out) {
  out->write("empty", safetensors_image("{}", ""));
  out->write("one",
             safetensors_image(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})",
                               std::string(16, '\x01')));
  out->write("two-metadata",
             safetensors_image(R"({"__metadata__":{"format":"pt"},)"
                               R"("a.weight":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},)"
                               R"("b":{"dtype":"I64","shape":[1,1],"data_offsets":[6,14]}})",
                               std::string(14, '\x02')));
  out->write("scalar-and-empty",
             safetensors_image(R"({"s":{"dtype":"U8","shape":[],"data_offsets":[0,1]},)"
                               R"("z":{"dtype":"F8_E4M3","shape":[0,4],"data_offsets":[1,1]}})",
                               std::string(1, '\x03')));
}

void write_tokenizer_text(const fs::path& source, SeedWriter* out) {
  const std::vector<std::string> texts = {
      read_text(source / "configs/prompts/infill.txt"),
      "<|im_start|>user\nWrite a kernel<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n",
      "caf\xc3\xa9 na\xc3\xafve \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 x\xcc\x81 \t\r\n  12345",
      "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    out->write("text-" + std::to_string(i) + "-plain", std::string(1, '\0') + texts[i]);
    out->write("text-" + std::to_string(i) + "-added", std::string(1, '\1') + texts[i]);
  }
  std::string ids(1, '\xff');
  for (std::int32_t id : {0, 1, 100, 200, 256, 270, 272, -1, 1 << 24}) {
    ids.append(reinterpret_cast<const char*>(&id), sizeof(id));
  }
  out->write("ids", ids);
}

void write_extract(const fs::path& source, SeedWriter* out) {
  Result<boost::json::value> items =
      parse_json(read_text(source / "data/dice-rl/kernel_infilling_dev.json"), "infilling items");
  if (!items.ok() || !items->is_array()) {
    std::fprintf(stderr, "seed_corpus: %s\n", items.status().to_string().c_str());
    return;
  }
  // A few items are enough seeds; the others only make each round of the fuzzer slower.
  const std::size_t count = std::min<std::size_t>(items->as_array().size(), 6);
  for (std::size_t i = 0; i < count; ++i) {
    const boost::json::value& item = items->as_array()[i];
    const std::string middle = json_string(item, "middle");
    const std::string prefix = json_string(item, "prefix");
    const std::string suffix = json_string(item, "suffix");
    const std::string name = "item-" + std::to_string(i);
    out->write(name + "-infill",
               prefix + '\0' + suffix + '\0' + "Here:\n```python\n" + middle + "```\nDone.");
    out->write(name + "-whole-file",
               prefix + '\0' + suffix + '\0' + "```py\n" + prefix + middle + suffix + "\n```");
    out->write(name + "-end-to-end", "```cuda\nx\n```\n```python\n" + prefix + middle + suffix);
  }
}

}  // namespace
}  // namespace dice::fuzz

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using dice::fuzz::SeedWriter;
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_seed_corpus SOURCE_DIR OUT_DIR\n");
    return 2;
  }
  const fs::path source = argv[1];
  const fs::path out = argv[2];

  SeedWriter wire(out / "wire");
  dice::fuzz::write_wire(&wire);
  SeedWriter config(out / "config");
  config.copy_files(source / "configs", ".yaml", std::string(1, '\0'));
  config.copy_files(source / "configs/curriculum", ".yaml", std::string(1, '\1'));
  config.copy_files(source / "configs/models", ".yaml", std::string(1, '\2'));
  SeedWriter safetensors(out / "safetensors");
  dice::fuzz::write_safetensors(&safetensors);
  SeedWriter model_config(out / "model_config");
  model_config.copy_files(source / "tests/model/fixtures/hf_tiny/model", ".json");
  SeedWriter tokenizer_json(out / "tokenizer_json");
  tokenizer_json.copy_files(source / "tests/tokenizer/testdata", ".json");
  SeedWriter tokenizer_text(out / "tokenizer_text");
  dice::fuzz::write_tokenizer_text(source, &tokenizer_text);
  SeedWriter extract(out / "extract");
  dice::fuzz::write_extract(source, &extract);
  SeedWriter static_check(out / "static_check");
  static_check.copy_files(source / "tests/reward/corpus/honest", ".py");
  static_check.copy_files(source / "tests/reward/corpus/cheat", ".py");
  return 0;
}
