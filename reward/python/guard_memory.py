"""Guard bytes around every tensor of the candidate's process (runner side; the judge only reads
what the runner reports).

dice_guard_alloc.so (reward/evaluate/guard/guard_arena.h) becomes PyTorch's CUDA allocator
before any CUDA memory exists. Each allocation gets guard bytes before and after it, from its
exact requested size on, and its own bytes start as 0xFF (NaN in every float type). After each
forward the runner asks check(): every guard byte that changed is a write outside a tensor, by
the candidate's kernels (nothing else of the forward writes device memory by hand). Freed
blocks are held until that check, so a temporary's overrun counts too. While the runner times
calls, watching is off: no fills, blocks reused at once (watch()).

This replaces PyTorch's caching allocator in the candidate's process only; the judge keeps its
own. The runner is the candidate's process, so this is a check against kernels with bugs, not
against an adversary who patches the runner: writing past a tensor earns nothing by itself.
"""

import ctypes
import os


class GuardMemoryError(Exception):
    """The allocator could not be installed, or a check could not read the guards."""


class GuardMemory:
    def __init__(self, torch, path):
        """Installs the allocator: call before anything allocates CUDA memory in this process."""
        path = os.path.abspath(path)
        try:
            self.lib = ctypes.CDLL(path)
            for name in ("dice_guard_status", "dice_guard_check"):
                getattr(self.lib, name).restype = ctypes.c_char_p
            self.lib.dice_guard_watch.restype = ctypes.c_int
            self.lib.dice_guard_watch.argtypes = [ctypes.c_int]
        except (OSError, AttributeError) as e:
            raise GuardMemoryError("cannot load %s: %s" % (path, e))
        status = self.lib.dice_guard_status().decode("utf-8", "replace")
        if status != "ok":
            raise GuardMemoryError(status)
        try:
            allocator = torch.cuda.memory.CUDAPluggableAllocator(path, "dice_guard_malloc",
                                                                 "dice_guard_free")
            torch.cuda.memory.change_current_allocator(allocator)
        except (AttributeError, RuntimeError) as e:
            raise GuardMemoryError("PyTorch refused the allocator: %s: %s" %
                                   (type(e).__name__, e))
        self.allocator = allocator  # kept alive with the process

    def watch(self, on):
        """Turns watching on or off; returns the previous state."""
        return bool(self.lib.dice_guard_watch(1 if on else 0))

    def check(self):
        """[{address, size, live, before, after, reach}] of the blocks whose guards changed since
        the last check (the caller synchronised the device). Raises GuardMemoryError when the
        guards could not be filled or read."""
        return parse_report(self.lib.dice_guard_check().decode("utf-8", "replace"))


def parse_report(text):
    """dice_guard_check's text -> the violations; GuardMemoryError for an "error" first line."""
    lines = text.splitlines()
    if not lines or lines[0] != "ok":
        raise GuardMemoryError(lines[0][len("error "):] if lines else "no report")
    out = []
    for line in lines[1:]:
        _, address, size, live, before, after, reach = (int(v) for v in line.split())
        out.append({"address": address, "size": size, "live": bool(live), "before": before,
                    "after": after, "reach": reach})
    return out


def describe(violations, named):
    """One line per violation, naming the tensor when `named` ({storage address: name}) knows
    it: "output 0 (4096 bytes): 16384 bytes written past its end, up to 16384 bytes after it"."""
    lines = []
    for v in violations:
        who = named.get(v["address"]) or ("a tensor of forward's" if v["live"] else
                                          "a temporary freed during forward")
        parts = []
        if v["after"]:
            parts.append("%d bytes written past its end, up to %d bytes after it" %
                         (v["after"], v["reach"]))
        if v["before"]:
            parts.append("%d bytes written before its start" % v["before"])
        lines.append("%s (%d bytes): %s" % (who, v["size"], "; ".join(parts)))
    return lines
