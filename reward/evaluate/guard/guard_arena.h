// GuardArena: the device-memory allocator of the candidate's process. runner.py installs it as
// PyTorch's CUDA allocator (dice_guard_alloc.so, a CUDAPluggableAllocator) before any CUDA
// memory exists, so every tensor the candidate's forward allocates, its outputs and temporaries,
// the inputs it was given and its parameters, is a block laid out as
//
//   base                     address (handed out)           address + size          block end
//   | front guard (512 B)    | the tensor's bytes           | back guard (>= 64 KiB) ... |
//     one guard byte value     0xFF while watched (NaN in     the same guard byte value
//                              every float type, -1 in ints)
//
// A kernel that writes past the end of a tensor (a missing bounds check, a grid rounded up) or
// before its start changes guard bytes, whatever the tensor's size: the guards start at the exact
// requested size, not at a rounded one. check() reads every guard of every watched block back
// and reports the blocks whose guards changed. Freed blocks are held back from reuse until the
// next check (a quarantine), so a temporary's overrun is seen too. A kernel that reads memory it
// never wrote reads 0xFF. Each block's guard byte is drawn from a set of values no common float,
// half or integer pattern is made of, and differs from block to block, so a kernel copying past
// the end of an input into the space past an output also changes bytes.
//
// While not watching (the runner's timing loop), blocks are reused at once and nothing is filled,
// so timed calls cost what they would under PyTorch's caching allocator: a free list per stream
// and block size, no device synchronisation.
//
// The arena runs in the candidate's process, so it stops kernels with bugs, not an adversary who
// patches the process (docs/SECURITY.md): writing past an output earns nothing by itself.
// Thread-safe. Knows no CUDA: device memory is a GuardDeviceMemory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dice {

// Device memory as the arena uses it: the CUDA driver in dice_guard_alloc.so; host memory in
// tests.
class GuardDeviceMemory {
 public:
  virtual ~GuardDeviceMemory() = default;
  // `bytes` of device memory, 512-byte aligned; 0 when there is none.
  virtual uint64_t reserve(size_t bytes) = 0;
  // Sets `bytes` bytes from `address` to `value`, ordered on `stream`. false on error.
  virtual bool fill(uint64_t address, unsigned char value, size_t bytes, void* stream) = 0;
  // Waits for all work on the device. false on error.
  virtual bool synchronize() = 0;
  // Copies `bytes` device bytes from `address` into `out` (after synchronize()). false on error.
  virtual bool read(uint64_t address, size_t bytes, unsigned char* out) = 0;
  // The last error, for reports.
  virtual std::string error() const = 0;
};

struct GuardArenaOptions {
  // Guard bytes before each allocation; a multiple of 512 keeps PyTorch's alignment.
  // Default: 512
  size_t front_guard_bytes = 512;
  // Guard bytes at least after the end of each allocation: a write up to this far past the end
  // is caught (further ones land in the next block's front guard or body). Default: 64 KiB
  size_t back_guard_bytes = 64 << 10;
  // Device memory reserved at a time (a larger block reserves its own). Default: 64 MiB
  size_t chunk_bytes = 64 << 20;
  // Bytes of freed, watched blocks held back until the next check; past this, a free
  // synchronises and checks the held blocks at once. Default: 1 GiB
  size_t quarantine_bytes = 1 << 30;
  // Seed of the guard byte values. Default: 1
  uint64_t seed = 1;
};

// A block whose guard bytes changed.
struct GuardViolation {
  uint64_t address = 0;     // the allocation as handed out
  size_t size = 0;          // its requested size in bytes
  bool live = false;        // still allocated at the check (else freed since the last one)
  size_t bytes_before = 0;  // changed guard bytes before its start
  size_t bytes_after = 0;   // changed guard bytes after its end
  size_t reach_after = 0;   // how far past the end the farthest changed byte lies (1 = the
                            // first byte after it)
};

struct GuardCheck {
  std::vector<GuardViolation> violations;
  std::string error;  // set when guards could not be filled or read: the check proves nothing
};

struct GuardArenaStats {
  size_t live_blocks = 0;
  size_t quarantined_bytes = 0;
};

class GuardArena {
 public:
  GuardArena(GuardDeviceMemory* memory, GuardArenaOptions options);

  // The address of `size` bytes for work on `stream`; 0 when the device has no memory left.
  uint64_t allocate(size_t size, void* stream);
  // Gives back what allocate() returned (unknown addresses are ignored).
  void release(uint64_t address);
  // Watching: fill new blocks, hold freed ones for the check. Returns the previous state.
  bool set_watching(bool watching);
  // Synchronises the device and reads back the guards of every watched block, live or held
  // since the last check; held blocks become free. Includes what drains found since.
  GuardCheck check();
  GuardArenaStats stats() const;

 private:
  struct Block {
    uint64_t base = 0;
    size_t bytes = 0;  // the whole block, guards included
    size_t size = 0;   // the requested size
    void* stream = nullptr;
    bool watched = false;  // filled with guards when allocated; checked
    unsigned char guard = 0;
  };
  using FreeKey = std::pair<void*, size_t>;  // (stream, block bytes)

  size_t block_bytes(size_t size) const;
  uint64_t take(size_t bytes, void* stream);
  // The guard bytes of `b` (and with `body`, its own bytes: 0xFF), ordered on `stream`.
  bool fill_guards(const Block& b, void* stream, bool body);
  bool inspect(const Block& b, bool live, std::vector<GuardViolation>* found);
  void drain_quarantine();
  unsigned char next_guard_byte();

  GuardDeviceMemory* memory_;
  const GuardArenaOptions options_;
  mutable std::mutex mutex_;
  bool watching_ = true;
  uint64_t rng_;
  std::unordered_map<uint64_t, Block> live_;  // by address handed out
  std::vector<Block> quarantine_;
  size_t quarantined_bytes_ = 0;
  std::map<FreeKey, std::vector<uint64_t>> free_;  // block bases
  uint64_t chunk_next_ = 0, chunk_end_ = 0;        // the chunk being cut
  std::vector<GuardViolation> pending_;            // found by drains since the last check
  std::string error_;  // first fill or read failure since the last check
  std::vector<unsigned char> scratch_;
};

}  // namespace dice
