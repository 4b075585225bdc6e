// A LibTorch archive written to a file the way dice writes files that must survive
// (common/durable_file.h: a temporary, fsync, rename, fsync of the folder), with every write error
// returned as a Status.
//
// Why not archive.save_to(path): LibTorch's file writer (PyTorchStreamWriter) throws c10::Error
// from its destructor when a write failed (it finishes the zip there and checks the stream
// again), so a disk that fills midway aborts the process (std::terminate, exit 134) instead of
// reaching any catch. Here LibTorch writes through a writer function that writes to the file
// itself, keeps the first error (errno, the bytes it was writing) and tells LibTorch every byte
// was written, so LibTorch never sees a failure; the error comes back afterwards.
#pragma once

#include <string>

#include "common/durable_file.h"
#include "common/status.h"

namespace torch::serialize {
class OutputArchive;
}

namespace dice {

// Writes `archive` to `path` (write_file_atomically_with's guarantees: on any error `path` is as
// it was and no temporary remains). `what` names the contents in errors. A failed write is an
// IOError such as
//   "ckpt/r1/resume.partial/optimizer.pt: optimizer state of 25829376 bytes: the write at byte
//    1048576 failed: No space left on device"
// (is_disk_space_shortage() recognises its ENOSPC or EDQUOT); LibTorch's own errors are IOErrors
// naming `path` and `what` too.
Status save_archive_file(torch::serialize::OutputArchive& archive, const std::string& path,
                         const std::string& what, const DurableWriteOptions& options = {});

}  // namespace dice
