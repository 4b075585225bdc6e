// A file of unknown size written durably from an std::ostream: an export, a report.
//
// The guarantees of write_file_atomically (common/durable_file.h: a temporary in the same folder,
// fsync, rename, fsync of the folder; the file is the whole new text or what it was before, also
// after a crash or a power loss), with the bytes coming from `write` through an ostream, and a
// floor of free disk space kept while they come: checked before the first byte and again after
// every `check_every_bytes`, so a large export beside a running run stops, with an error naming
// the folder and the bytes, before it fills the disk the run's reward log is on.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "common/durable_file.h"
#include "common/status.h"

namespace dice {

struct StreamWriteOptions {
  // The mode, the floor (min_free_bytes) and where the calls go, as for write_file_atomically.
  DurableWriteOptions file;
  // How many bytes may be written between two checks of the floor. Default: 64 MiB
  std::uint64_t check_every_bytes = std::uint64_t{64} << 20;
};

// Writes what `write` puts into the stream it is given to `path`. An error from `write`, from the
// stream's writes (ENOSPC included) or from the floor ends the write: the temporary is removed
// and `path` is untouched.
Status write_stream_atomically(const std::string& path,
                               const std::function<Status(std::ostream& out)>& write,
                               const StreamWriteOptions& options = {});

}  // namespace dice
