// The page's files (web/), embedded into dice-dash at build time (embed_web.cmake writes
// web_files.cc), so the executable serves its page on an air-gapped node with nothing beside it.
#pragma once

#include <string_view>

namespace dice::dash {

struct WebFile {
  std::string_view name;          // path under web/, e.g. "index.html", "vendor/uPlot.min.css"
  std::string_view content_type;  // from the extension
  std::string_view bytes;
};

// The file named `name`, or null.
const WebFile* find_web_file(std::string_view name);

}  // namespace dice::dash
