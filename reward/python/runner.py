"""The runner: the only process of an evaluation that runs candidate code (docs/SECURITY.md).

It loads the candidate (its load_inline answered from the prebuilt modules), builds ModelNew, and
then does what the judge (judge.py) asks over the channel (channel.py): run forward on inputs the
judge sends as bytes and send the outputs back as bytes, list the kernels one forward launched,
time calls. It computes no verdict: every answer is a claim the judge checks. Once candidate code
has run, anything in this process may have been changed by it, this file included.

Usage (the reward worker starts it in the strictest sandbox, ahead of its work):
  python3 runner.py --job-from-stdin [--device cuda] [--launch-probe dice_launch_probe.so]
                    [--guard-alloc dice_guard_alloc.so]
    imports torch (torch.utils.cpp_extension only once a candidate names more of it than
    load_inline: CppExtensionStandIn), installs the guard allocator (guard_memory.py: guard
    bytes around every tensor), creates the CUDA context (and loads the launch probe, or else
    warms the profiler), prints "DICE_EVAL_READY", then takes its channel to the judge (a
    descriptor that arrives with the first byte on stdin) and serves the judge's requests until
    "exit" or the end of the channel.
  python3 runner.py --channel-fd FD [--device cpu]   (the judge's --spawn-runner, for tests)

Requests (JSON; tensors travel as memfds, channel.py) and answers:
  load     {candidate, modules: [[name, path]], seed, inputs: ModelNew's init values}
                                                                      -> {ok} | {error, detail}
  forward  {inputs: values, slots: [{slot, dtype, shape} | null]} + the slots' memfds after the
           inputs'    -> {outputs: [value | {tensor: slot, ...} | {unexpected: {dtype, shape,
           device}}], inputs_modified: [i], written_outside: [line], guard_error} | error
  kernels  {inputs: values}  -> {launches: [[name, library file or "?"]], probe, written_outside,
           guard_error} | error
  (written_outside: a line per tensor whose guard bytes forward changed; guard_error: why the
  guards could not be read)
  stage    {inputs: values}  (one timing input set, kept on the device)              -> {ok}
  time     {calls, seed} (calls 0..calls-1 of timed_calls.time_request) -> {digests} | error
  exit
"""

import importlib
import importlib.util
import os
import sys
import time
import traceback
import types
import warnings

import channel
import cpp_extension_stand_in
import guard_memory
import shared_poison
import timed_calls

READY_LINE = "DICE_EVAL_READY"
DETAIL_LIMIT = 2000


class LaunchProbeError(Exception):
    """The launch probe could not load or start (the kernel check then uses the profiler)."""


class LaunchProbe:
    """dice_launch_probe.so through ctypes: the names of the kernels launched while fn runs."""

    GRAPH_LAUNCH = "@graph-launch"  # the probe's line for a CUDA graph launch

    def __init__(self, path, attach=True):
        """Loads the library and, with `attach` (a CUDA device), takes CUPTI's one subscriber
        now, before candidate code can take it."""
        import ctypes
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
            self.attach, self.detach = lib.dice_launch_probe_attach, lib.dice_launch_probe_detach
            self.start, self.stop = lib.dice_launch_probe_start, lib.dice_launch_probe_stop
        except (OSError, AttributeError) as e:
            raise LaunchProbeError("cannot load %s: %s" % (path, e))
        self.stop.restype = ctypes.c_char_p
        if attach:
            rc = self.attach()
            if rc != 0:
                raise LaunchProbeError("CUPTI refused the subscription (error %d)" % rc)

    def launches(self, fn):
        """([[kernel name, file name of the launching library or "?"]], whether a CUDA graph
        was launched) of one call of fn."""
        rc = self.start()
        if rc != 0:
            raise LaunchProbeError("CUPTI refused to record launches (error %d)" % rc)
        try:
            fn()
        finally:
            text = self.stop() or b""
        lines = [n for n in text.decode("utf-8", "replace").split("\n") if n]
        launches = []
        for line in lines:
            if line != self.GRAPH_LAUNCH:
                name, _, path = line.partition("\t")
                launches.append([name, os.path.basename(path) if path and path != "?" else "?"])
        return launches, self.GRAPH_LAUNCH in lines


class CandidateError(Exception):
    def __init__(self, failure, detail):
        super().__init__(detail)
        self.failure, self.detail = failure, detail


def import_module_from(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CandidateError("importError", "cannot import module %s from %s" % (name, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_candidate(cpp_extension, source, prebuilt):
    """Exec the candidate with load_inline answering from the prebuilt modules."""
    def load_inline_shim(name, *args, **kwargs):
        if name not in prebuilt:
            raise CandidateError("importError", "load_inline(name=%r): no prebuilt module" % name)
        return prebuilt[name]

    def refuse(*args, **kwargs):
        raise CandidateError("importError", "only load_inline is supported")

    cpp_extension.load_inline, cpp_extension.load = load_inline_shim, refuse
    module = types.ModuleType("candidate")
    module.__file__ = "candidate.py"
    sys.modules["candidate"] = module
    exec(compile(source, "candidate.py", "exec"), module.__dict__)
    return module


class Runner:
    def __init__(self, torch, cpp_extension, device, probe, guard=None):
        self.torch, self.cpp_extension, self.probe = torch, cpp_extension, probe
        self.guard = guard  # a GuardMemory on CUDA devices
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.model = None
        self.staged = []
        # The shared-memory poison (a SharedPoison), or why there is none (a string).
        self.shared_poison = "not a CUDA device"
        if self.cuda:
            try:
                self.shared_poison = shared_poison.SharedPoison(torch.cuda.current_device())
            except shared_poison.SharedPoisonError as e:
                self.shared_poison = str(e)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def values(self, message, fds):
        return channel.decode(self.torch, message.get("inputs", []), fds, self.device)

    # ---- requests ----------------------------------------------------------------------------

    def load(self, message, fds):
        torch = self.torch
        init = channel.decode(torch, message.get("inputs", []), fds)
        with open(message["candidate"], encoding="utf-8") as f:
            source = f.read()
        try:
            prebuilt = {name: import_module_from(name, path) for name, path in message["modules"]}
            cand = load_candidate(self.cpp_extension, source, prebuilt)
            model_new_cls = getattr(cand, "ModelNew")
        except CandidateError:
            raise
        except BaseException as e:  # noqa: BLE001 - SystemExit too: the candidate's, not ours
            raise CandidateError("importError", "loading the candidate: %s: %s\n%s" % (
                type(e).__name__, str(e)[:1000], traceback.format_exc(limit=3)[-1500:]))
        try:
            torch.manual_seed(int(message["seed"]))
            self.model = model_new_cls(*init).to(self.device)
        except BaseException as e:  # noqa: BLE001
            raise CandidateError("importError", "constructing ModelNew: %s: %s" %
                                 (type(e).__name__, str(e)[:1000]))
        return {"ok": True}, []

    def poison_shared_memory(self):
        """Every SM's shared memory filled with NaN before a forward (shared_poison.py). Device
        memory the candidate allocates starts as 0xFF already (guard_memory.py)."""
        if self.cuda and isinstance(self.shared_poison, shared_poison.SharedPoison):
            self.sync()
            self.shared_poison.poison(self.torch.cuda.current_stream().cuda_stream)
            self.sync()

    def guard_report(self, named):
        """{written_outside: [line per tensor whose guard bytes changed since the last check]} or
        {guard_error: why the guards could not be read}; {} without guards. `named` maps storage
        addresses to names for the lines ("output 0")."""
        if self.guard is None:
            return {}
        try:
            violations = self.guard.check()
        except guard_memory.GuardMemoryError as e:
            return {"guard_error": str(e)[:500]}
        if not violations:
            return {}
        if self.model is not None:
            for p in list(self.model.parameters()) + list(self.model.buffers()):
                named.setdefault(storage_address(p), "a parameter or buffer")
        return {"written_outside": guard_memory.describe(violations, named)[:20]}

    def run(self, inputs):
        try:
            with self.torch.no_grad():
                out = self.model(*inputs)
            self.sync()
            return out
        except BaseException as e:  # noqa: BLE001 - any error in candidate code
            raise CandidateError("runtimeError", "forward raised %s: %s" %
                                 (type(e).__name__, str(e)[:DETAIL_LIMIT]))

    def forward(self, message, fds):
        inputs_count = sum(1 for item in message.get("inputs", [])
                           if isinstance(item, dict) and "tensor" in item)
        slot_fds = fds[inputs_count:]
        try:
            return self.forward_into(message, fds[:inputs_count], slot_fds)
        finally:
            for fd in slot_fds:
                os.close(fd)

    def forward_into(self, message, fds, slot_fds):
        torch = self.torch
        inputs = self.values(message, fds)
        pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        self.poison_shared_memory()
        out = self.run(inputs)
        flat = timed_calls.flat_outputs(out)
        guards = self.guard_report(tensor_names(torch, {"input": inputs, "output": flat}))
        modified = [i for i, (a, b) in enumerate(zip(inputs, pristine))
                    if isinstance(b, torch.Tensor) and not same_values(torch, a, b)]
        for i, t in enumerate(flat):
            if isinstance(t, torch.Tensor) and not dense(t):
                raise CandidateError("shapeMismatch", "output %d is not a dense tensor "
                                     "(strides %s for shape %s)" % (i, t.stride(), tuple(t.shape)))
        slots = message.get("slots", [])
        items = []
        for i, t in enumerate(flat):
            if not isinstance(t, torch.Tensor):
                try:
                    items.extend(channel.encode(torch, [t])[0])
                except channel.ProtocolError as e:
                    raise CandidateError("shapeMismatch", str(e))
                continue
            declared = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                        "device": t.device.type}
            slot = slots[i] if i < len(slots) and isinstance(slots[i], dict) else None
            if (slot is None or slot.get("dtype") != declared["dtype"] or
                    slot.get("shape") != declared["shape"] or
                    not 0 <= slot.get("slot", -1) < len(slot_fds) or
                    not channel.write_into_fd(torch, t, slot_fds[slot["slot"]])):
                items.append({"unexpected": declared})
                continue
            items.append(dict(declared, tensor=slot["slot"]))
        return dict({"outputs": items, "inputs_modified": modified}, **guards), []

    def kernels(self, message, fds):
        inputs = self.values(message, fds)
        answer = self.launches(inputs)
        answer.update(self.guard_report(tensor_names(self.torch, {"input": inputs})))
        return answer, []

    def launches(self, inputs):
        """The kernels one forward on `inputs` launched, by the probe or else the profiler."""
        probe = self.probe
        probe_error = str(probe) if isinstance(probe, LaunchProbeError) else ""
        if isinstance(probe, LaunchProbe):
            try:
                launches, graph = probe.launches(lambda: self.run(inputs))
                if not graph:
                    return {"launches": launches, "probe": "cupti"}
            except LaunchProbeError as e:
                probe_error = str(e)
            probe.detach()  # the profiler needs CUPTI's subscriber (a graph hides its kernels)
        try:
            from torch.profiler import profile, ProfilerActivity
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    self.run(inputs)
                names = [e.name for e in prof.events()
                         if str(getattr(e, "device_type", "")).endswith("CUDA")]
        except CandidateError:
            raise
        except Exception as e:  # noqa: BLE001 - CUPTI missing or busy
            return {"launches": None, "probe_error": probe_error,
                "profiler_error": "%s: %s" % (type(e).__name__, e)}
        return {"launches": [[n, "?"] for n in names], "probe": "profiler",
                "probe_error": probe_error}

    def stage(self, message, fds):
        self.staged.append(self.values(message, fds))
        return {"ok": True}, []

    def time(self, message, fds):
        """The calls of a timing request (timed_calls.time_request), answered with their digests
        only: the judge clocks the request from outside, so nothing here measures time."""
        try:
            calls, seed = int(message["calls"]), int(message["seed"])
        except (KeyError, TypeError, ValueError):
            raise CandidateError("internalError", "a timing request without calls and seed")
        if not self.staged or calls < 0 or seed < 0:
            raise CandidateError("internalError", "a timing request with nothing staged, or "
                                 "a negative count or seed")
        # Timed calls allocate as under PyTorch's own allocator: no fills, blocks reused at once.
        was_watching = self.guard.watch(False) if self.guard is not None else False
        try:
            digests = timed_calls.time_request(self.torch, self.model, self.staged, calls, seed,
                                               self.device, self.sync)
        except BaseException as e:  # noqa: BLE001
            raise CandidateError("runtimeError", "timed forward raised %s: %s" %
                                 (type(e).__name__, str(e)[:DETAIL_LIMIT]))
        finally:
            if self.guard is not None:
                self.guard.watch(was_watching)
        return {"digests": digests}, []


def same_values(torch, a, b):
    """Bit-for-bit equality of two input tensors (NaN equal to NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def storage_address(t):
    """The address of the allocation under tensor t (a view's whole buffer)."""
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr()


def tensor_names(torch, groups):
    """{storage address: "input 1"} for the CUDA tensors of {"input": [values], ...}."""
    named = {}
    for kind, values in groups.items():
        for i, t in enumerate(values):
            if isinstance(t, torch.Tensor) and t.is_cuda:
                named.setdefault(storage_address(t), "%s %d" % (kind, i))
    return named


def dense(t):
    """No element shared by two indices (no zero or overlapping strides): an expanded view is one
    value repeated, not an output."""
    dims = sorted((s, n) for s, n in zip(t.stride(), t.shape) if n > 1)
    expected = 1
    for stride, size in dims:
        if stride < expected:
            return False
        expected = stride * size
    return True


def serve(runner, sock):
    handlers = {"load": runner.load, "forward": runner.forward, "kernels": runner.kernels,
                "stage": runner.stage, "time": runner.time}
    while True:
        try:
            message, fds = channel.receive(sock)
        except EOFError:
            return
        op = message.get("op")
        if op == "exit":
            return
        try:
            if op not in handlers:
                raise CandidateError("internalError", "unknown request %r" % (op,))
            answer, out_fds = handlers[op](message, fds)
        except CandidateError as e:
            answer, out_fds = {"error": e.failure, "detail": e.detail[:DETAIL_LIMIT]}, []
        except BaseException as e:  # noqa: BLE001 - CUDA errors, SystemExit from candidate code
            answer, out_fds = {"error": "runtimeError", "detail": "%s: %s" % (
                type(e).__name__, str(e)[:DETAIL_LIMIT])}, []
        try:
            channel.send(sock, answer, out_fds)
        finally:
            for fd in out_fds:
                os.close(fd)


def import_torch(device, guard_alloc=""):
    """(torch, torch.utils.cpp_extension as candidates find it (cpp_extension_stand_in.install),
    the GuardMemory or why there is none). On a CUDA device the guard allocator is installed
    before the first CUDA allocation (it cannot be swapped in later)."""
    import torch
    cpp_extension = cpp_extension_stand_in.install(torch)
    guard = None
    if device.startswith("cuda"):
        if not guard_alloc:
            guard = "no guard allocator was given (--guard-alloc)"
        else:
            try:
                guard = guard_memory.GuardMemory(torch, guard_alloc)
            except guard_memory.GuardMemoryError as e:
                guard = str(e)
        torch.empty(1, device=device)
    return torch, cpp_extension, guard


def warm_profiler(torch, device):
    """One tiny profiled op: the profiler's first session costs seconds."""
    try:
        from torch.profiler import profile, ProfilerActivity
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                torch.ones(1, device=device).add_(1)
                torch.cuda.synchronize(device)
            prof.events()
    except Exception:  # noqa: BLE001
        pass


def parse_args(argv):
    import argparse
    p = argparse.ArgumentParser(description="dice's runner: the candidate's process")
    p.add_argument("--job-from-stdin", action="store_true")
    p.add_argument("--channel-fd", type=int, default=-1)
    p.add_argument("--device", default="cuda")
    p.add_argument("--launch-probe", default="")
    p.add_argument("--guard-alloc", default="")
    return p.parse_args(argv)


def take_channel_from_stdin():
    """The channel to the judge: a descriptor that arrives with the first byte on stdin."""
    import socket
    stdin = channel.open_channel(0)
    _, fds, _, _ = socket.recv_fds(stdin, 16, 1)
    if len(fds) != 1:
        raise SystemExit("runner: no channel came with the job")
    return channel.open_channel(fds[0])


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()
    torch, cpp_extension, guard = import_torch(args.device, args.guard_alloc)
    cuda = args.device.startswith("cuda")
    probe = None
    if args.launch_probe:
        try:
            probe = LaunchProbe(args.launch_probe, attach=cuda)
        except LaunchProbeError as e:
            probe = e
    if cuda and not isinstance(probe, LaunchProbe):
        warm_profiler(torch, args.device)
    if args.job_from_stdin:
        sys.stdout.write(READY_LINE + "\n")
        sys.stdout.flush()
        sock = take_channel_from_stdin()
    else:
        sock = channel.open_channel(args.channel_fd)
    runner = Runner(torch, cpp_extension, args.device, probe,
                    guard if isinstance(guard, guard_memory.GuardMemory) else None)
    channel.send(sock, {"ready": round(time.monotonic() - start, 4),
                        "probe_error": str(probe) if isinstance(probe, LaunchProbeError) else "",
                        "shared_poison_error": runner.shared_poison if cuda and isinstance(
                            runner.shared_poison, str) else "",
                        "guard_error": guard if isinstance(guard, str) else ""})
    serve(runner, sock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
