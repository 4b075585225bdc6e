"""No free passes (docs/SECURITY.md, "Failures a candidate causes are scored"): whatever the
candidate's process sends over the channel, and however it ends, the judge's verdict is one of the
candidate's scored failures, never internalError (which the learner leaves unscored). The runner
is scripted here (a thread on the other end of the channel) to answer as a hostile candidate's
process could: truncated, deeply nested, wrongly typed, with huge numbers and huge declared
sizes; then seeded random mutations of an honest answer. Also the judge's own CUDA
out-of-memory, through a stand-in for torch.cuda. CPU only; skipped when python3 has no torch."""

import argparse
import json
import os
import random
import socket
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "evaluate_fixtures")
sys.path.insert(0, os.path.join(HERE, "..", "..", "reward", "python"))

try:
    import torch
except ImportError:
    torch = None

import channel  # noqa: E402
import judge  # noqa: E402

# The classes a candidate's own failure may take; internalError is not one of them.
CANDIDATE_FAILURES = {"antiCheat", "resourceLimit", "runtimeError", "shapeMismatch", "crashed",
                      "incorrect", "importError"}


def reference_model(message, fds):
    """The model a load request asks for, as runner.py builds it (reference_add.py's Model is
    its own correct ModelNew)."""
    init = channel.decode(torch, message["inputs"], fds)
    namespace = {}
    with open(os.path.join(FIXTURES, "reference_add.py")) as f:
        exec(compile(f.read(), "reference_add.py", "exec"), namespace)
    torch.manual_seed(int(message["seed"]))
    return namespace["Model"](*init)


def honest_outputs(model, message, fds):
    """The answer runner.py gives to a forward: the outputs written into the judge's slots."""
    count = sum(1 for item in message["inputs"] if "tensor" in item)
    inputs = channel.decode(torch, message["inputs"], fds[:count])
    slot_fds = fds[count:]
    try:
        with torch.no_grad():
            outputs = model(*inputs)
        items = []
        for out, slot in zip(outputs, message["slots"]):
            assert channel.write_into_fd(torch, out, slot_fds[slot["slot"]])
            items.append({"tensor": slot["slot"], "dtype": slot["dtype"],
                          "shape": slot["shape"], "device": "cpu"})
    finally:
        for fd in slot_fds:
            os.close(fd)
    return {"outputs": items, "inputs_modified": []}


class ScriptedRunner(threading.Thread):
    """The runner's end of the channel: a hello, "ok" to load (building the reference's model),
    then `forward(model, message, fds)` for every forward: raw packet bytes or an answer dict;
    ends the channel after `end_after` requests when given."""

    def __init__(self, sock, forward, hello=True, end_after=None):
        super().__init__(daemon=True)
        self.sock, self.forward, self.hello, self.end_after = sock, forward, hello, end_after

    def run(self):
        try:
            if self.hello:
                channel.send(self.sock, {"ready": 0.0})
            served = 0
            while self.end_after is None or served < self.end_after:
                message, fds = channel.receive(self.sock, 30)
                served += 1
                if message.get("op") == "exit":
                    return
                if message.get("op") == "load":
                    model = reference_model(message, fds)
                    channel.send(self.sock, {"ok": True})
                    continue
                answer = self.forward(model, message, fds)
                extra = []
                if isinstance(answer, tuple):
                    answer, extra = answer
                if isinstance(answer, bytes):
                    self.sock.send(answer)
                else:
                    channel.send(self.sock, answer, extra)
                for fd in extra:
                    os.close(fd)
        except (OSError, EOFError, channel.ProtocolError):
            pass
        finally:
            self.sock.close()


def run_judge(forward, answer_seconds=30, **runner):
    """The judge's verdict on reference_add.py against a scripted runner."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    mine.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    script = ScriptedRunner(theirs, forward, **runner)
    script.start()
    args = judge.parse_args(["--reference", os.path.join(FIXTURES, "reference_add.py"),
                             "--runner-candidate", "candidate.py", "--device", "cpu",
                             "--answer-seconds", str(answer_seconds), "--trials", "2"])
    job = argparse.Namespace(stdin=None)
    result = judge.empty_result()
    judge.judge(args, job, mine, result, judge.PhaseClock(result["phases"], 0.0), None)
    judge.close_runner(mine, None)
    mine.close()
    script.join(30)
    return result


def nested(depth):
    """[[[...[1]...]]]: `depth` lists deep."""
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def closed(fds, answer):
    """`answer`, the request's descriptors closed."""
    for fd in fds:
        os.close(fd)
    return answer


def answer_with(**fields):
    """A forward that answers honestly, with `fields` replaced."""
    def forward(model, message, fds):
        answer = honest_outputs(model, message, fds)
        answer.update(fields)
        return answer
    return forward


@unittest.skipIf(torch is None, "python3 has no torch")
class MalformedAnswersAreTheCandidatesTest(unittest.TestCase):
    def assert_scored(self, result, failure="antiCheat"):
        self.assertEqual(result["failure"], failure, result)
        self.assertFalse(result["correct"])

    def test_the_scripted_honest_runner_passes(self):
        # The baseline the attacks below differ from: the script itself is a correct runner.
        self.assertEqual(run_judge(honest_outputs)["failure"], "none")

    def test_deeply_nested_packet(self):
        # Once RecursionError in the judge's JSON decoder: internalError.
        for raw in (b"[" * 100000, b'{"a":' * 20000,
                    json.dumps({"outputs": nested(20)}).encode()):
            with self.subTest(raw=raw[:20]):
                r = run_judge(lambda model, message, fds, raw=raw: closed(fds, raw))
                self.assert_scored(r)
                self.assertIn("malformed answer", r["detail"])

    def test_truncated_and_not_json(self):
        good = json.dumps({"outputs": [{"value": 1}], "inputs_modified": []}).encode()
        for raw in (good[:len(good) // 2], b"\xff\xfe", b"[1, 2]", b"null", b"{}{}"):
            with self.subTest(raw=raw):
                r = run_judge(lambda model, message, fds, raw=raw: closed(fds, raw))
                self.assert_scored(r)

    def test_wrong_types_in_the_outputs(self):
        # A dtype that is a list: once TypeError (unhashable) in channel.decode: internalError.
        for outputs in ([{"tensor": 0, "dtype": ["float32"], "shape": [4, 8]}],
                        [{"tensor": 0, "dtype": {"a": 1}, "shape": [4, 8]}],
                        [{"tensor": "0", "dtype": "float32", "shape": [4, 8]}],
                        [{"tensor": 0, "dtype": "float32", "shape": "4,8"}],
                        [{"tensor": 0, "dtype": "float32", "shape": [4.0, 8]}],
                        [{"value": {"a": 1}}], [{"value": [1], "sequence": ["list"]}],
                        [5], "outputs", {"tensor": 0}):
            with self.subTest(outputs=outputs):
                self.assert_scored(run_judge(answer_with(outputs=outputs)))

    def test_huge_numbers_and_sizes(self):
        for fields in ({"outputs": [{"tensor": 0, "dtype": "float64", "shape": [1 << 35]}]},
                       {"outputs": [{"value": 10 ** 400}, {"value": 1}]},
                       {"inputs_modified": [10 ** 400]},
                       {"outputs": [{"tensor": 1 << 70, "dtype": "float32", "shape": [4, 8]}]}):
            with self.subTest(fields=str(fields)[:60]):
                self.assert_scored(run_judge(answer_with(**fields)))

    def test_wrong_types_in_the_other_fields(self):
        for fields in ({"inputs_modified": 7}, {"inputs_modified": {"a": 1}},
                       {"written_outside": "everything"}):
            with self.subTest(fields=fields):
                self.assert_scored(run_judge(answer_with(**fields)))

    def test_descriptors_with_an_answer(self):
        # runner.py sends none; kept, 64 per answer would run the judge out of open files.
        def forward(model, message, fds):
            answer = honest_outputs(model, message, fds)
            extra = [os.memfd_create("x") for _ in range(8)]
            return answer, extra
        r = run_judge(forward)
        self.assert_scored(r)
        self.assertIn("8 descriptors", r["detail"])

    def test_an_error_answer_names_only_a_scored_class(self):
        for error, detail, failure in (
                ("internalError", "", "runtimeError"), (["x"], "", "runtimeError"),
                ({"a": 1}, {"b": 2}, "runtimeError"),
                ("runtimeError", "forward raised OutOfMemoryError: CUDA out of memory. Tried to "
                 "allocate 80.00 GiB", "resourceLimit"),
                ("runtimeError", "forward raised MemoryError: ", "resourceLimit")):
            with self.subTest(error=error):
                r = run_judge(lambda model, message, fds, error=error, detail=detail: closed(
                    fds, {"error": error, "detail": detail}))
                self.assert_scored(r, failure)

    def test_seeded_mutations_of_an_honest_answer(self):
        # Random damage to the bytes of an honest answer's packet: cut, bytes replaced, a field's
        # value swapped for another type. Whatever it does, the verdict is a scored one.
        rng = random.Random(49)
        kinds = [None, True, -1, 1 << 62, 2.5, float("nan"), "x" * 3, [], {}, [[[]]], ["float32"]]
        for k in range(40):
            def forward(model, message, fds, k=k):
                answer = honest_outputs(model, message, fds)
                item = answer["outputs"][k % 2]
                key = rng.choice(sorted(item))
                item[key] = rng.choice(kinds)
                raw = json.dumps(answer).encode()
                if k % 3 == 0:
                    raw = raw[:rng.randrange(len(raw))]
                elif k % 3 == 1:
                    at = rng.randrange(len(raw))
                    raw = raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1:]
                return raw
            with self.subTest(k=k):
                r = run_judge(forward)
                self.assertIn(r["failure"], CANDIDATE_FAILURES | {"none"}, r)


# A test-double extension (as in evaluate_fixtures/) whose forward finds the runner's end of the
# channel among its process's descriptors and sends the judge a packet of its own first.
FORGING_EXTENSION = """import os
import socket

PACKET = %r


def channel():
    for fd in range(3, 1024):
        try:
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        if s.type == socket.SOCK_SEQPACKET:
            return s
        s.detach()


def fused(x, scale, bias, idx):
    channel().send(PACKET)
    return x * scale + bias, idx.sum()
"""


@unittest.skipIf(torch is None, "python3 has no torch")
class ForgedPacketFromCandidateCodeTest(unittest.TestCase):
    """The same attacks end to end: judge.py and the real runner.py (--spawn-runner), the packet
    sent by the candidate's own code from inside the runner."""

    def verdict(self, packet):
        import subprocess
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            extension = os.path.join(folder, "forging_ext.py")
            with open(extension, "w") as f:
                f.write(FORGING_EXTENSION % packet)
            proc = subprocess.run(
                [sys.executable, os.path.join(HERE, "..", "..", "reward", "python", "judge.py"),
                 "--spawn-runner", "--device", "cpu",
                 "--reference", os.path.join(FIXTURES, "reference_add.py"),
                 "--runner-candidate", os.path.join(FIXTURES, "candidate_add.py"),
                 "--runner-module", "fused_ext=" + extension],
                capture_output=True, text=True, timeout=180)
        lines = [l for l in proc.stdout.splitlines() if l.startswith("DICE_EVAL_RESULT  ")]
        self.assertEqual(len(lines), 1, proc.stdout + proc.stderr)
        return json.loads(lines[0].split(" ", 2)[2])

    def test_forged_packets_are_the_candidates_anti_cheat(self):
        for packet in (b"[" * 100000,
                       json.dumps({"outputs": [{"tensor": 0, "dtype": ["float32"],
                                                "shape": [4, 8]}]}).encode(),
                       json.dumps({"outputs": [{"tensor": 0, "dtype": "float64",
                                                "shape": [1 << 35]}]}).encode()):
            with self.subTest(packet=packet[:40]):
                r = self.verdict(packet)
                self.assertEqual(r["failure"], "antiCheat", r)
                self.assertIn("malformed answer", r["detail"])


@unittest.skipIf(torch is None, "python3 has no torch")
class RunnerEndsTest(unittest.TestCase):
    def test_a_runner_that_ends_during_candidate_code_is_scored(self):
        # Ends while the candidate's forward runs (after load): the candidate's process died.
        r = run_judge(honest_outputs, end_after=2)
        self.assertEqual(r["failure"], "crashed", r)

    def test_a_runner_that_never_answers_is_a_timeout(self):
        def silent(model, message, fds):
            time.sleep(2)
            return closed(fds, {"error": "runtimeError", "detail": "too late"})
        r = run_judge(silent, answer_seconds=0.5)
        self.assertEqual(r["failure"], "timeout", r)

    def test_a_runner_that_never_started_is_ours(self):
        # No hello: the runner had not been given the candidate yet (docs/SECURITY.md).
        r = run_judge(honest_outputs, hello=False, end_after=0)
        self.assertEqual(r["failure"], "internalError", r)
        self.assertIn("the runner did not start", r["detail"])


class TimingAnswerTest(unittest.TestCase):
    """The runner's answer to a timing request: digests, one per call, or its antiCheat."""

    def test_anything_but_one_digest_list_per_call_is_malformed(self):
        for answer in ({"digests": [[]]}, {"digests": {}}, {"digests": "x"}, {},
                       {"ms": [0.5, 0.5]}, {"digests": [[], [], []]}):
            with self.subTest(answer=answer):
                with self.assertRaises(judge.EvalFailure) as e:
                    judge.checked_digest_answer(answer, 2)
                self.assertEqual(e.exception.failure, "antiCheat")
        self.assertEqual(judge.checked_digest_answer({"digests": [1, 2]}, 2), [1, 2])


@unittest.skipIf(torch is None, "python3 has no torch")
class ChannelFuzzTest(unittest.TestCase):
    """channel.receive and channel.decode raise ProtocolError (or EOFError) and nothing else,
    whatever a packet holds: the judge's only boundary with the candidate's process."""

    def test_seeded_random_packets(self):
        rng = random.Random(50)
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        leaves = [None, True, 0, -1, 1 << 63, -(1 << 64), 10 ** 30, 1.5, float("inf"), "",
                  "float32", "bool", "tuple", "list", "cuda"]

        def value(depth):
            roll = rng.random()
            if depth > 24 or roll < 0.4:
                return rng.choice(leaves)
            if roll < 0.7:
                return [value(depth + 1) for _ in range(rng.randrange(4))]
            keys = ["tensor", "dtype", "shape", "value", "sequence", "device", "x"]
            return {rng.choice(keys): value(depth + 1) for _ in range(rng.randrange(5))}

        for k in range(300):
            raw = json.dumps({"inputs": [value(0) for _ in range(rng.randrange(4))]}).encode()
            if k % 4 == 0:
                raw = raw[:rng.randrange(len(raw) + 1)] or b" "
            elif k % 4 == 1:
                raw = rng.choice([b"[", b'{"a":']) * rng.randrange(1, 5000) + raw
            fds = [os.memfd_create("t") for _ in range(rng.randrange(3))]
            for fd in fds:
                os.ftruncate(fd, rng.choice([0, 4, 8, 128]))
            socket.send_fds(a, [raw], fds)
            for fd in fds:
                os.close(fd)
            try:
                message, got = channel.receive(b, 5)
            except channel.ProtocolError:
                continue
            try:
                channel.decode(torch, message.get("inputs"), got)
            except channel.ProtocolError:
                pass


class FakeCuda:
    """torch.cuda as own_failure() reads it: memory the judge's allocator holds, of a device."""

    class OutOfMemoryError(RuntimeError):
        pass

    def __init__(self, reserved, total=80 << 30):
        self.reserved, self.total = reserved, total

    def memory_reserved(self):
        return self.reserved

    def current_device(self):
        return 0

    def get_device_properties(self, device):
        return argparse.Namespace(total_memory=self.total)


class JudgeOutOfMemoryTest(unittest.TestCase):
    def failure(self, reserved, error, loaded):
        fake = argparse.Namespace(cuda=FakeCuda(reserved))
        if isinstance(error, type):
            error = error("CUDA out of memory. Tried to allocate 2.00 GiB")
        try:
            raise error
        except Exception as e:  # noqa: BLE001
            return judge.own_failure(fake, e, loaded)

    def test_oom_while_the_candidate_holds_the_gpu_is_its_resource_limit(self):
        # Once internalError: a GPU-memory hoarder's own verdict went unscored.
        failure, detail = self.failure(1 << 30, FakeCuda.OutOfMemoryError, True)
        self.assertEqual(failure, "resourceLimit")
        self.assertIn("1.00 of 80.00 GiB", detail)
        failure, _ = self.failure(1 << 30, RuntimeError("CUDA error: out of memory"), True)
        self.assertEqual(failure, "resourceLimit")

    def test_oom_before_candidate_code_ran_is_ours(self):
        failure, _ = self.failure(1 << 30, FakeCuda.OutOfMemoryError, False)
        self.assertEqual(failure, "internalError")

    def test_oom_of_a_judge_that_holds_most_of_the_gpu_is_ours(self):
        # The reference alone needs that much: the task is too large for its slot.
        failure, _ = self.failure(int(0.6 * (80 << 30)), FakeCuda.OutOfMemoryError, True)
        self.assertEqual(failure, "internalError")

    def test_other_exceptions_are_ours_with_where_and_the_traceback(self):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            failure, detail = self.failure(0, KeyError("x"), True)
        self.assertEqual(failure, "internalError")
        self.assertRegex(detail, r"^KeyError \(at judge_free_pass_test.py:\d+\): 'x'")
        self.assertIn("Traceback", err.getvalue())


if __name__ == "__main__":
    unittest.main()
