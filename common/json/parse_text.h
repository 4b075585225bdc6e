// One JSON document from text, with the place a syntax error stopped the parser, for errors that
// name file, line and column (tokenizer.json, the learner's task and SFT files).
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>

namespace dice {

// The one value filling `text` (white space around it allowed, nothing else). On a syntax error
// returns null, sets `*error` to Boost.JSON's error and `*position` to "line:column" (1-based)
// of the byte where parsing stopped.
boost::json::value parse_json_text(std::string_view text, boost::system::error_code* error,
                                   std::string* position);

}  // namespace dice
