// libFuzzer target: the YAML config and curriculum loader. The first byte picks the document
// kind (a run's main file, a curriculum, a model shape); the rest is the YAML text, decoded by
// load_config_text, the path every config file goes through after it is read.
//
// Checked beyond "no crash": a main file that loads prints (print_dice_config, what
// --print-config shows) to YAML that loads again, as dice_config.h promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config/load.h"
#include "options/curriculum_options.h"
#include "options/dice_config.h"
#include "options/model_shape.h"

namespace dice::fuzz {
namespace {

void load_main_file(const std::string& text) {
  Result<DiceConfig> config = config::load_config_text<DiceConfig>(text, "fuzz.yaml");
  if (!config.ok()) return;
  const std::string printed = print_dice_config(*config);
  if (!config::load_config_text<DiceConfig>(printed, "printed.yaml").ok()) std::abort();
}

}  // namespace
}  // namespace dice::fuzz

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      dice::fuzz::load_main_file(text);
      break;
    case 1:
      (void)dice::config::load_config_text<dice::CurriculumOptions>(text, "curriculum.yaml");
      break;
    default:
      (void)dice::config::load_config_text<dice::ModelShape>(text, "shape.yaml");
      break;
  }
  return 0;
}
