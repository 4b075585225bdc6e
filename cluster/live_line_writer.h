// Draws a RunView's updates (cluster/run_view.h) on a terminal: permanent lines scroll up, and
// the live line below them is redrawn in place (carriage return, then erase to the end of the
// line), cut to the terminal's width so that it never wraps (a wrapped line could not be redrawn).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "cluster/run_view.h"

namespace dice::cluster {

class LiveLineWriter {
 public:
  // `columns` says the terminal's width when asked (it may change while a run is followed).
  LiveLineWriter(std::ostream& out, std::function<int()> columns);

  // Writes `update` and flushes.
  void write(const ViewUpdate& update);

 private:
  std::ostream& out_;
  std::function<int()> columns_;
  std::string live_;  // the live line as shown; "" when there is none
};

}  // namespace dice::cluster
