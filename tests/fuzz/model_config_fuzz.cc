// libFuzzer target: the config.json reader (parse_model_config, which read_model_config runs on
// the file's text).
//
// Checked beyond "no crash": a config that parses is written back (model_config_to_json, what
// the checkpoint writer saves) to JSON that parses again to the same fields.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/checkpoint/model_config.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dice::Result<dice::ModelConfig> config = dice::parse_model_config(text, "config.json");
  if (!config.ok()) return 0;
  dice::Result<dice::ModelConfig> again =
      dice::parse_model_config(dice::model_config_to_json(*config), "written.json");
  if (!again.ok()) {
    std::fprintf(stderr, "written back, it does not parse: %s\n",
                 again.status().to_string().c_str());
    std::abort();
  }
  if (again->hidden_size != config->hidden_size || again->vocab_size != config->vocab_size ||
      again->mask_token_id != config->mask_token_id || again->head_dim != config->head_dim ||
      again->block_size != config->block_size) {
    std::abort();
  }
  return 0;
}
