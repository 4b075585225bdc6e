// JSON text for files people read and diff: one member per line, two-space indentation; small
// containers (only scalars inside, or an array of such objects: shape_variants, counts) on one
// line. Boost.JSON's serialize() writes everything on one line.
#pragma once

#include <boost/json.hpp>
#include <string>

namespace dice {

// `value` as text, ending in a newline.
std::string pretty_json(const boost::json::value& value);

}  // namespace dice
