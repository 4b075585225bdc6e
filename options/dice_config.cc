#include "options/dice_config.h"

#include "common/config/encode.h"
#include "common/config/load.h"
#include "common/config/scalar_text.h"

namespace dice {
namespace {

// Problems only visible with every file loaded, reported against the main file's keys.
void check_across_files(const DiceConfig& config, std::vector<config::ConfigError>* errors) {
  std::vector<std::string> names;
  for (const auto& phase : config.curriculum.phases) names.push_back(phase.name);
  for (std::size_t i = 0; i < config.learner.phases.size(); ++i) {
    const std::string& wanted = config.learner.phases[i];
    bool found = false;
    for (const auto& name : names) found = found || name == wanted;
    if (found) continue;
    std::string message = "no phase '" + wanted + "' in " + config.curriculum_file;
    std::string guess = config::closest_name(wanted, names);
    message += guess.empty() ? " (phases: " + config::join_names(names) + ")"
                             : " (did you mean '" + guess + "'?)";
    errors->push_back({config::index_path("learner.phases", i), message, {}});
  }
  if (config.model_shape && config.model_shape->mask_token_id != config.rollout.mask_token_id) {
    errors->push_back({"rollout.mask_token_id",
                       "differs from mask_token_id " +
                           std::to_string(config.model_shape->mask_token_id) + " in " +
                           config.model_shape_file,
                       {}});
  }
}

}  // namespace

Result<CurriculumOptions> load_curriculum(const std::string& path) {
  return config::load_config_file<CurriculumOptions>(path, {});
}

Result<ModelShape> load_model_shape(const std::string& path) {
  return config::load_config_file<ModelShape>(path, {});
}

Result<DiceConfig> load_dice_config(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  DICE_ASSIGN_OR_RETURN(YAML::Node root, config::read_yaml_file(path));
  config::ErrorLocator locator(path);
  std::vector<config::ConfigError> errors;
  DiceConfig result;
  DICE_RETURN_IF_ERROR(config::decode_document(root, config::directory_of(path), overrides,
                                               &locator, &errors, &result));
  DICE_RETURN_IF_ERROR(locator.to_status(errors));

  // The referenced files' own errors name those files; the context says who referred to them.
  Result<CurriculumOptions> curriculum = load_curriculum(result.curriculum_file);
  if (!curriculum.ok()) {
    return curriculum.status().with_context(locator.locate("curriculum_file") +
                                            ": curriculum_file");
  }
  result.curriculum = std::move(curriculum).value();
  if (!result.model_shape_file.empty()) {
    Result<ModelShape> shape = load_model_shape(result.model_shape_file);
    if (!shape.ok()) {
      return shape.status().with_context(locator.locate("model_shape_file") + ": model_shape_file");
    }
    result.model_shape = std::move(shape).value();
  }
  check_across_files(result, &errors);
  DICE_RETURN_IF_ERROR(locator.to_status(errors));
  return result;
}

std::string print_dice_config(const DiceConfig& config) {
  return config::to_yaml_text(config);
}

}  // namespace dice
