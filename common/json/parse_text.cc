#include "common/json/parse_text.h"

namespace dice {

boost::json::value parse_json_text(std::string_view text, boost::system::error_code* error,
                                   std::string* position) {
  namespace json = boost::json;
  json::stream_parser parser;
  error->clear();
  const std::size_t consumed = parser.write_some(text.data(), text.size(), *error);
  if (!*error && consumed < text.size()) *error = json::make_error_code(json::error::extra_data);
  if (!*error) parser.finish(*error);
  if (!*error) return parser.release();
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < consumed && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  *position = std::to_string(line) + ":" + std::to_string(column);
  return nullptr;
}

}  // namespace dice
