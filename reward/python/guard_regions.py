"""Guard regions after a candidate's outputs: catches a kernel that writes past the end of an
output (runner side; the judge only reads the finding).

Before each forward the runner fills PyTorch's allocator cache with NaN (runner.py,
poison_free_memory), and the candidate's output tensors are carved out of those filler blocks.
The allocator rounds every block up, so between the end of an output's storage and the end of
its block lie bytes that nothing may write: they must still hold the filler's pattern after the
forward. Only blocks that lie inside a filler are checked (elsewhere the old contents are
unknown), and only the rest of the output's own block (the blocks after it may have been the
candidate's temporaries).

The runner is the candidate's process, so this is a check against kernels with bugs, not
against an adversary who patches the runner: writing past an output earns nothing by itself.
"""

# float32 NaN (0x7FC00000) as little-endian bytes: the filler's pattern, byte a of it at
# address a % 4 (filler blocks start 512-byte aligned).
NAN_BYTES = (0x00, 0x00, 0xC0, 0x7F)
# Bytes checked past one output at most.
MAX_GUARD_BYTES = 1 << 20


def blocks_of(snapshot):
    """[(address, size, state)] of every block in torch.cuda.memory_snapshot()'s segments, in
    address order (a segment lists its blocks in order from its start)."""
    blocks = []
    for segment in snapshot:
        address = int(segment.get("address", 0))
        for block in segment.get("blocks", []):
            size = int(block.get("size", 0))
            blocks.append((address, size, block.get("state", "")))
            address += size
    return blocks


def guard_regions(spans, blocks, fillers):
    """For each output storage span (start, nbytes): (address, length) of the rest of the block
    that holds it, where that block lies inside one of the filler ranges (start, nbytes) and has
    bytes past the span; else None."""
    regions = []
    for start, nbytes in spans:
        region = None
        end = start + nbytes
        for address, size, _ in blocks:
            if address <= start < address + size:
                block_end = address + size
                inside = any(f <= address and block_end <= f + n for f, n in fillers)
                if inside and end < block_end:
                    region = (end, min(block_end - end, MAX_GUARD_BYTES))
                break
        regions.append(region)
    return regions


def raw_bytes(torch, address, length):
    """A uint8 tensor over device memory [address, address + length), without owning it."""
    class Raw:
        __cuda_array_interface__ = {"shape": (length,), "typestr": "|u1",
                                    "data": (address, False), "version": 2}
    return torch.as_tensor(Raw(), device="cuda")


def overwritten(torch, address, length):
    """How many bytes of [address, address + length) no longer hold the filler's pattern."""
    view = raw_bytes(torch, address, length)
    pattern = torch.tensor(NAN_BYTES, dtype=torch.uint8, device=view.device)
    index = (torch.arange(length, device=view.device) + address % 4) % 4
    return int((view != pattern[index]).sum())


def storage_span(torch, t):
    """(address, bytes) of the storage under tensor t (a view's whole buffer: writing anywhere in
    it is the candidate's own business)."""
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    nbytes = storage.nbytes() if hasattr(storage, "nbytes") else storage.size() * t.element_size()
    return storage.data_ptr(), nbytes


def check_outputs(torch, outputs, fillers):
    """[(output index, bytes overwritten)] for the CUDA outputs whose guard region was written."""
    owners = [i for i, t in enumerate(outputs)
              if isinstance(t, torch.Tensor) and t.is_cuda and t.numel() > 0]
    if not owners:
        return []
    spans = [storage_span(torch, outputs[i]) for i in owners]
    regions = guard_regions(spans, blocks_of(torch.cuda.memory_snapshot()), fillers)
    found = []
    for owner, region in zip(owners, regions):
        if region is not None:
            bad = overwritten(torch, *region)
            if bad:
                found.append((owner, bad))
    return found
