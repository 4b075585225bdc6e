"""The channel between an evaluation's judge (judge.py) and its runner (runner.py).

The judge never imports candidate code; the runner is the only process that does. They talk over
one AF_UNIX SOCK_SEQPACKET socket that the reward worker creates and hands to each with its job.
Every message is one packet: a JSON object, and with it, through SCM_RIGHTS, one memfd per tensor.
A tensor crosses as plain bytes: the JSON names its dtype and shape, the memfd holds exactly
numel * element_size bytes, row-major. Nothing else crosses: no pickles, no Python objects, so the
candidate can hand the judge bytes and nothing that runs.

    packet := JSON object (UTF-8, at most MAX_PACKET bytes) + ancillary [memfd, memfd, ...]
    tensor := {"tensor": k, "dtype": "float32", "shape": [4, 8], "device": "cuda"}  (k-th memfd)

The judge's inputs travel in memfds the judge makes. The runner's outputs travel in memfds the
judge also makes, sized for the reference's outputs and sent with the request (slots_for); the
runner fills those whose dtype and shape its output has, and describes any other output without
its bytes, so the runner never has to grow a file (its RLIMIT_FSIZE stays small).
    value  := {"value": <JSON number | bool | null | string>}
            | {"value": [...], "sequence": "tuple" | "list"}   (nested lists come back as tuples)

The receiving side trusts nothing of what it reads: decode() checks every field against a fixed
table of dtypes, bounds shapes, and checks each memfd's size against the declared shape.
"""

import json
import mmap
import os
import socket

# Largest packet: the JSON of one message (details and kernel names are cut before this).
MAX_PACKET = 1 << 20
# Most descriptors in one packet (one per tensor).
MAX_FDS = 64
# Most dimensions and elements of one tensor a runner may declare.
MAX_DIMS = 16
MAX_NUMEL = 1 << 36

# The only dtypes that cross, by name. A name not here is a protocol error.
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
               "uint8", "bool", "complex64", "complex128")


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message."""


class AnswerTimeout(ProtocolError):
    """The other side sent nothing within the time given."""


def dtype_table(torch):
    return {name: getattr(torch, name) for name in DTYPE_NAMES}


def dtype_name(torch, dtype):
    for name, d in dtype_table(torch).items():
        if d == dtype:
            return name
    raise ProtocolError("dtype %s cannot cross the channel" % dtype)


def open_channel(fd):
    return socket.socket(fileno=fd)


def send(sock, message, fds=()):
    data = json.dumps(message, allow_nan=True).encode("utf-8")
    if len(data) > MAX_PACKET:
        raise ProtocolError("message of %d bytes is larger than %d" % (len(data), MAX_PACKET))
    socket.send_fds(sock, [data], list(fds)) if fds else sock.sendall(data)


def receive(sock, timeout=None):
    """(message dict, [fds]). Raises ProtocolError on a malformed packet, EOFError at the end."""
    sock.settimeout(timeout)
    try:
        data, fds, flags, _ = socket.recv_fds(sock, MAX_PACKET + 1, MAX_FDS)
    except socket.timeout:
        raise AnswerTimeout("no answer within %s s" % timeout)
    except ConnectionResetError:
        # A process that ends with packets of ours unread resets the channel instead of closing
        # it: the same end, reached when it died just after our last send.
        raise EOFError("the other side ended with messages unread")
    if not data and not fds:
        raise EOFError("the other side closed the channel")
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) or len(data) > MAX_PACKET:
        for fd in fds:
            os.close(fd)
        raise ProtocolError("a packet larger than the channel allows")
    try:
        # RecursionError: a packet of nested brackets ("[[[[..." within MAX_PACKET) exhausts
        # the decoder's recursion before any check of ours could run.
        message = json.loads(data.decode("utf-8"))
        if not isinstance(message, dict):
            raise ProtocolError("a message must be a JSON object")
        check_tree(message)
    except (UnicodeDecodeError, ValueError, RecursionError, ProtocolError) as e:
        for fd in fds:
            os.close(fd)
        raise ProtocolError("not a well-formed message: %s: %s" % (type(e).__name__,
                                                                   str(e)[:200]))
    return message, fds


# Deepest nesting of a message's JSON (a message is at most 4 levels deep plus plain values of
# MAX_PLAIN_DEPTH), and the integers a message may hold: int64, what any count, index or shape of
# a tensor fits in. A larger integer would overflow float arithmetic (math.isfinite, a digest's
# difference) in the judge's checks.
MAX_JSON_DEPTH = 16
MAX_JSON_INT = (1 << 63) - 1


def check_tree(value):
    """ProtocolError unless `value` (a decoded JSON document) nests at most MAX_JSON_DEPTH deep
    and every integer in it fits in int64. Iterative: the check itself cannot be exhausted."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                raise ProtocolError("nested deeper than %d levels" % MAX_JSON_DEPTH)
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_JSON_INT:
            raise ProtocolError("an integer of %d bits" % v.bit_length())


def tensor_to_fd(torch, t):
    """A memfd holding the bytes of tensor t (any device), row-major."""
    flat = t.detach().contiguous().reshape(-1)
    nbytes = flat.numel() * flat.element_size()
    fd = os.memfd_create("dice-tensor", os.MFD_CLOEXEC)
    if nbytes:
        os.ftruncate(fd, nbytes)
        with mmap.mmap(fd, nbytes) as mm:
            dest = torch.frombuffer(mm, dtype=torch.uint8, count=nbytes)
            dest.copy_(flat.view(torch.uint8))
            del dest
    return fd


def sized_fd(nbytes):
    """A memfd of `nbytes` for the other side to fill (the judge makes the runner's output
    files: a file grows only in the process that sizes it, under that process's RLIMIT_FSIZE,
    and the runner's stays small)."""
    fd = os.memfd_create("dice-tensor", os.MFD_CLOEXEC)
    if nbytes:
        os.ftruncate(fd, nbytes)
    return fd


def write_into_fd(torch, t, fd):
    """Tensor t's bytes (any device, row-major) into memfd `fd`, which must be exactly their size
    already. False when it is not."""
    flat = t.detach().contiguous().reshape(-1)
    nbytes = flat.numel() * flat.element_size()
    if os.fstat(fd).st_size != nbytes:
        return False
    if nbytes:
        with mmap.mmap(fd, nbytes) as mm:
            dest = torch.frombuffer(mm, dtype=torch.uint8, count=nbytes)
            dest.copy_(flat.view(torch.uint8))
            del dest
    return True


def slots_for(torch, tensors):
    """For outputs expected like `tensors` (None for a plain value): ([{dtype, shape} or None],
    [memfd per tensor, in order])."""
    slots, fds = [], []
    for t in tensors:
        if isinstance(t, torch.Tensor):
            slots.append({"slot": len(fds), "dtype": dtype_name(torch, t.dtype),
                          "shape": list(t.shape)})
            fds.append(sized_fd(t.numel() * t.element_size()))
        else:
            slots.append(None)
    return slots, fds


def encode(torch, values):
    """Flat list of tensors and plain values -> (JSON list, [fds])."""
    items, fds = [], []
    for v in values:
        if isinstance(v, torch.Tensor):
            items.append({"tensor": len(fds), "dtype": dtype_name(torch, v.dtype),
                          "shape": list(v.shape), "device": v.device.type})
            fds.append(tensor_to_fd(torch, v))
        else:
            items.append({"value": plain(v)} if not isinstance(v, (tuple, list)) else
                         {"value": plain(v), "sequence": type(v).__name__ if isinstance(
                             v, list) else "tuple"})
    return items, fds


# Plain values: numbers, booleans, None, short strings, and lists or tuples of them (a module's
# init arguments: kernel sizes, strides, torch.Size), to this depth and length.
MAX_PLAIN_DEPTH = 4
MAX_PLAIN_ITEMS = 4096
MAX_PLAIN_TEXT = 4096


def plain(v, depth=0):
    """v as JSON (tuples and torch.Size become lists); ProtocolError for anything else."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str) and len(v) <= MAX_PLAIN_TEXT:
        return v
    if isinstance(v, (tuple, list)) and depth < MAX_PLAIN_DEPTH and len(v) <= MAX_PLAIN_ITEMS:
        return [plain(x, depth + 1) for x in v]
    raise ProtocolError("a %s cannot cross the channel" % type(v).__name__)


def from_plain(v, sequence=None, depth=0):
    """A value plain() made, checked (its sender is not trusted); the outer sequence restored."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str) and len(v) <= MAX_PLAIN_TEXT:
        return v
    if isinstance(v, list) and depth < MAX_PLAIN_DEPTH and len(v) <= MAX_PLAIN_ITEMS:
        items = [from_plain(x, "tuple", depth + 1) for x in v]
        return items if sequence == "list" else tuple(items)
    raise ProtocolError("bad plain value")


def _declared_shape(item):
    shape = item.get("shape")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d for d in shape):
        raise ProtocolError("bad shape %r" % (shape,))
    numel = 1
    for d in shape:
        numel *= d
    if numel > MAX_NUMEL:
        raise ProtocolError("shape %r is too large" % (shape,))
    return shape, numel


def decode(torch, items, fds, device=None):
    """JSON list + fds from receive() -> flat list of tensors (on `device`, else the host) and plain
    values. Every fd is closed, whatever happens."""
    try:
        if not isinstance(items, list) or len(items) > MAX_FDS * 4:
            raise ProtocolError("values must be a list")
        table = dtype_table(torch)
        out, used = [], set()
        for item in items:
            if not isinstance(item, dict):
                raise ProtocolError("a value must be an object")
            if "value" in item:
                sequence = item.get("sequence")
                if sequence not in (None, "list", "tuple"):
                    raise ProtocolError("bad sequence kind")
                if sequence is None and isinstance(item["value"], list):
                    raise ProtocolError("a list value without its kind")
                out.append(from_plain(item["value"], sequence))
                continue
            k = item.get("tensor")
            if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(fds) or k in used:
                raise ProtocolError("bad tensor index %r" % (k,))
            used.add(k)
            name = item.get("dtype")
            dtype = table.get(name) if isinstance(name, str) else None
            if dtype is None:
                raise ProtocolError("dtype %s cannot cross the channel" % str(name)[:64])
            shape, numel = _declared_shape(item)
            # The declared size is checked against the bytes before anything is allocated: a
            # shape the sender made up must not size the receiver's memory.
            nbytes = numel * torch.empty((), dtype=dtype).element_size()
            if os.fstat(fds[k]).st_size != nbytes:
                raise ProtocolError("tensor %d: %d bytes for shape %s %s (%d expected)" % (
                    k, os.fstat(fds[k]).st_size, shape, name, nbytes))
            t = torch.empty(shape, dtype=dtype)
            if nbytes:
                # A private mapping, copied at once: later writes by the sender change nothing.
                with mmap.mmap(fds[k], nbytes, flags=mmap.MAP_PRIVATE) as mm:
                    src = torch.frombuffer(mm, dtype=torch.uint8, count=nbytes)
                    if dtype == torch.bool:
                        t.copy_(src.reshape(shape) != 0)
                    else:
                        t.reshape(-1).view(torch.uint8).copy_(src)
                    del src
            out.append(t if device is None else t.to(device))
        return out
    finally:
        for fd in fds:
            os.close(fd)


def declared_devices(items):
    """The device type the sender declared for each value ("cuda", "cpu"; None for plain ones)."""
    return [item.get("device") if isinstance(item, dict) and "tensor" in item else None
            for item in items]
