// Layout of long CUDA lines (kernel signatures, launches) the way people break them: on one line
// when it fits in 100 columns, else the list on the next line, else one item per line.
#pragma once

#include <string>
#include <vector>

namespace dice::data {

// head + "(" + items joined by ", " + ")" + tail, `indent` spaces in front, ending in a newline.
// "__global__ void k", {"const float* x", "int n"}, " {" -> "__global__ void k(const float* x,
// int n) {\n".
std::string wrap_list(int indent, const std::string& head, const std::vector<std::string>& items,
                      const std::string& tail);

}  // namespace dice::data
