#include "cluster/live_line_writer.h"

#include <utility>

namespace dice::cluster {
namespace {

constexpr const char* kEraseLine = "\r\x1b[K";  // to the line's start, then erase it

}  // namespace

LiveLineWriter::LiveLineWriter(std::ostream& out, std::function<int()> columns)
    : out_(out), columns_(std::move(columns)) {}

void LiveLineWriter::write(const ViewUpdate& update) {
  const std::string live = update.live.value_or(live_);
  if (update.lines.empty() && live == live_) return;
  if (!live_.empty()) out_ << kEraseLine;
  for (const std::string& line : update.lines) out_ << line << '\n';
  // One column short of the width: a line that fills the last column leaves the cursor waiting
  // to wrap on some terminals, and the next carriage return would then go to the line below.
  const int columns = columns_ ? columns_() : 80;
  const std::size_t width = columns > 1 ? static_cast<std::size_t>(columns - 1) : 79;
  live_ = live;
  out_ << live_.substr(0, width);
  out_.flush();
}

}  // namespace dice::cluster
