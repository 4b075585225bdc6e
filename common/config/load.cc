#include "common/config/load.h"

#include <filesystem>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "common/read_file.h"

namespace dice::config {

namespace {

// Sees a document's events without building it; only where it starts matters here.
class DocumentProbe : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  YAML::Mark start;
};

std::string mark_text(const std::string& name, const YAML::Mark& mark) {
  return name + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Counts the documents in `text` (0, 1 or "more than 1"), or fails on text the parser cannot
// get past. yaml-cpp 0.7's LoadAll loops forever, allocating, on a stray token outside any node
// ("," or binary junk; yaml-cpp issues #1040, #499): the parser keeps reporting an empty document
// at the same place. Documents are walked here by hand, and a document that starts where the
// previous one did is that stuck token.
Result<int> count_documents(const std::string& text, const std::string& name) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  int documents = 0;
  int previous_start = -1;
  while (parser && documents < 3) {
    DocumentProbe probe;
    if (!parser.HandleNextDocument(probe)) break;
    if (probe.start.pos == previous_start) {
      return Status::invalid_argument(mark_text(name, probe.start) +
                                      ": invalid YAML: text here is neither a key nor a value");
    }
    previous_start = probe.start.pos;
    ++documents;
  }
  return documents;
}

}  // namespace

Result<YAML::Node> parse_yaml_text(const std::string& text, const std::string& name) {
  try {
    DICE_ASSIGN_OR_RETURN(int documents, count_documents(text, name));
    if (documents > 1) {
      return Status::invalid_argument(
          name + ": expected one YAML document, found more (separated by ---)");
    }
    if (documents == 0) return YAML::Node(YAML::NodeType::Null);
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return Status::invalid_argument(mark_text(name, e.mark) + ": invalid YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    return Status::invalid_argument(name + ": invalid YAML: " + e.msg);
  }
}

Result<YAML::Node> read_yaml_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::invalid_argument(path + ": is a directory, expected a YAML file");
  }
  Result<std::string> text = read_file(path);
  if (text.status().code() == StatusCode::kNotFound) {
    return Status::not_found(path + ": no such config file");
  }
  if (!text.ok()) return text.status();
  return parse_yaml_text(text.value(), path);
}

std::string directory_of(const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) absolute = path;
  return absolute.lexically_normal().parent_path().string();
}

std::string working_directory() {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  return ec ? std::string(".") : cwd.string();
}

}  // namespace dice::config
