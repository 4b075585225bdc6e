#include "common/config/overrides.h"

#include <cctype>

#include "common/config/decode.h"
#include "common/config/scalar_text.h"

namespace dice::config {
namespace {

// "a.b[2].c" -> {"a", "b", "[2]", "c"}; index steps keep their brackets.
Status split_key_path(const std::string& key_path, std::vector<std::string>* steps) {
  std::size_t i = 0;
  std::string current;
  auto finish_key = [&]() -> Status {
    if (current.empty()) return Status::invalid_argument("empty key in '" + key_path + "'");
    steps->push_back(current);
    current.clear();
    return Status::ok_status();
  };
  while (i < key_path.size()) {
    char c = key_path[i];
    if (c == '.') {
      if (current.empty() && !steps->empty() && steps->back()[0] == '[') {
        ++i;  // "a[0].b": the dot after an index
        continue;
      }
      DICE_RETURN_IF_ERROR(finish_key());
      ++i;
    } else if (c == '[') {
      if (!current.empty()) DICE_RETURN_IF_ERROR(finish_key());
      if (steps->empty())
        return Status::invalid_argument("index before any key in '" + key_path + "'");
      std::size_t close = key_path.find(']', i);
      std::uint64_t index = 0;
      if (close == std::string::npos ||
          !parse_uint64_text(key_path.substr(i + 1, close - i - 1), &index)) {
        return Status::invalid_argument("bad list index in '" + key_path +
                                        "' (write [0], [1], ...)");
      }
      steps->push_back(key_path.substr(i, close - i + 1));
      i = close + 1;
      if (i < key_path.size() && key_path[i] != '.' && key_path[i] != '[') {
        return Status::invalid_argument("expected '.' after ']' in '" + key_path + "'");
      }
    } else if (std::isspace(static_cast<unsigned char>(c)) || c == ']') {
      return Status::invalid_argument("unexpected '" + std::string(1, c) + "' in key '" + key_path +
                                      "'");
    } else {
      current += c;
      ++i;
    }
  }
  if (!current.empty() || steps->empty() || key_path.back() == '.')
    DICE_RETURN_IF_ERROR(finish_key());
  return Status::ok_status();
}

// The element index a step names in a list: "[2]" or, after a dot, "2".
bool step_index(const std::string& step, std::size_t* index) {
  std::uint64_t value = 0;
  std::string digits = step[0] == '[' ? step.substr(1, step.size() - 2) : step;
  if (!parse_uint64_text(digits, &value)) return false;
  *index = static_cast<std::size_t>(value);
  return true;
}

Status apply_one(YAML::Node& root, const std::string& text, ErrorLocator* locator) {
  auto fail = [&](const std::string& why) {
    return Status::invalid_argument("override '" + text + "': " + why);
  };
  std::size_t eq = text.find('=');
  if (eq == std::string::npos) return fail("expected KEY=VALUE, e.g. learner.optimizer.lr=2e-6");
  std::string key_path = text.substr(0, eq);
  std::string value_text = text.substr(eq + 1);
  if (key_path.empty()) return fail("the key before '=' is empty");
  std::vector<std::string> steps;
  Status split = split_key_path(key_path, &steps);
  if (!split.ok()) return fail(split.message());

  YAML::Node value;
  if (value_text.empty()) {
    value = YAML::Node(std::string());
  } else {
    try {
      value = YAML::Load(value_text);
    } catch (const YAML::Exception& e) {
      return fail("the value is not valid YAML: " + e.msg + " (quote it if it is a string)");
    }
  }

  if (root.IsNull()) root.reset(YAML::Node(YAML::NodeType::Map));
  YAML::Node current;
  current.reset(root);
  std::string path;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string& step = steps[i];
    bool last = i + 1 == steps.size();
    if (current.IsSequence()) {
      std::size_t index = 0;
      if (!step_index(step, &index)) {
        return fail("'" + path + "' is a list; expected an index like " + path + "[0], got '" +
                    step + "'");
      }
      if (index >= current.size()) {
        return fail("list '" + path + "' has " + std::to_string(current.size()) +
                    " element(s), so there is no index " + std::to_string(index));
      }
      path = index_path(path, index);
      if (last) {
        current[index] = value;
      } else {
        YAML::Node child = current[index];
        current.reset(child);
      }
    } else if (current.IsMap()) {
      if (step[0] == '[')
        return fail("'" + (path.empty() ? std::string("the file") : path) + "' is not a list");
      path = join_path(path, step);
      if (last) {
        current[step] = value;
      } else {
        YAML::Node child = current[step];
        if (!child.IsDefined() || child.IsNull()) {
          current[step] = YAML::Node(YAML::NodeType::Map);
          child.reset(current[step]);
        }
        current.reset(child);
      }
    } else {
      return fail("'" + path + "' is a value (" + describe_node(current) + "), so it has no key '" +
                  step + "'");
    }
  }
  locator->add_override(path, text);
  return Status::ok_status();
}

}  // namespace

Status apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides,
                       ErrorLocator* locator) {
  for (const auto& text : overrides) DICE_RETURN_IF_ERROR(apply_one(root, text, locator));
  return Status::ok_status();
}

}  // namespace dice::config
