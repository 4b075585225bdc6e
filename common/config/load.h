// Loading an options struct from a YAML file: read, parse, apply overrides, decode, validate.
//
//   DICE_ASSIGN_OR_RETURN(auto shape, config::load_config_file<ModelShape>(path, {}));
//
// Paths: a field flagged `is_path` holding a relative path is made absolute. A path written in the
// file resolves against the directory of that file (so configs can name their neighbours wherever
// dice is started from); a path given as a command-line override, or left at its default,
// resolves against the working directory, as a shell user would expect. An empty path stays
// empty ("not set"). After loading every path is absolute, so the printed config means the same
// thing wherever it is read back.
//
// Errors are one invalid-argument Status listing each problem as
// "file:line:col: key.path: what" (or "override 'k=v': key.path: what"); a file that cannot be
// read is not-found / io-error naming it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/decode.h"
#include "common/config/overrides.h"
#include "common/config/validate.h"
#include "common/status.h"

namespace dice::config {

// The one YAML document in `text`; `name` is used in messages. An empty text is a null node.
Result<YAML::Node> parse_yaml_text(const std::string& text, const std::string& name);
Result<YAML::Node> read_yaml_file(const std::string& path);

// The absolute directory holding `path` (relative to the working directory).
std::string directory_of(const std::string& path);
std::string working_directory();

// Decodes an already parsed document into *out, adding problems to *errors and what it learns
// about positions and overrides to *locator (which names the file). Relative paths in the document
// resolve against `file_dir`. Returns an error only for a bad override, which stops decoding.
template <class T>
Status decode_document(YAML::Node root, const std::string& file_dir,
                       const std::vector<std::string>& overrides, ErrorLocator* locator,
                       std::vector<ConfigError>* errors, T* out) {
  DICE_RETURN_IF_ERROR(apply_overrides(root, overrides, locator));
  DecodeContext ctx{errors, locator, file_dir, working_directory()};
  locator->add_position("", node_position(root));
  std::size_t before = errors->size();
  decode_value(root, *out, "", ctx);
  if (errors->size() == before) validate_value(*out, "", errors);
  return Status::ok_status();
}

template <class T>
Result<T> decode_config(YAML::Node root, const std::string& file_name, const std::string& file_dir,
                        const std::vector<std::string>& overrides) {
  ErrorLocator locator(file_name);
  std::vector<ConfigError> errors;
  T value{};
  DICE_RETURN_IF_ERROR(decode_document(root, file_dir, overrides, &locator, &errors, &value));
  DICE_RETURN_IF_ERROR(locator.to_status(errors));
  return value;
}

template <class T>
Result<T> load_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  DICE_ASSIGN_OR_RETURN(YAML::Node root, read_yaml_file(path));
  return decode_config<T>(root, path, directory_of(path), overrides);
}

// For tests and embedded defaults: `text` as if it were a file named `name` in `file_dir`.
template <class T>
Result<T> load_config_text(const std::string& text, const std::string& name,
                           const std::vector<std::string>& overrides = {},
                           const std::string& file_dir = working_directory()) {
  DICE_ASSIGN_OR_RETURN(YAML::Node root, parse_yaml_text(text, name));
  return decode_config<T>(root, name, file_dir, overrides);
}

}  // namespace dice::config
