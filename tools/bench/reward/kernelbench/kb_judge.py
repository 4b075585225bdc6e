#!/usr/bin/env python3
"""Judges the candidates dice-judge dumped (--dump-sources) with KernelBench's own evaluation.

KernelBench is not part of dice: its source folder is given with --kernelbench (a copy of the
fetched repository, see README.md here) and imported from there; nothing of it is copied.
The flow is the one of KernelBench's scripts/eval_from_generations.py:
  1. its parallel build cache: kernelbench.compile.batch_compile, --compile-workers processes,
     each candidate built with load_inline into its own build folder;
  2. a fresh process per candidate (a spawned pool of one, as that script does for one GPU)
     running kernelbench.eval.eval_kernel_against_ref against the reference, with the same
     number of correctness trials as dice-judge and, with --timing on, its performance trials.
Tolerance: KernelBench picks atol = rtol from the precision (fp32: 1e-4) and has no option for
it; --tolerance (default DICE's 1e-2) replaces kernelbench.eval.get_tolerance_for_precision in
the evaluating process. --tolerance kernelbench keeps KernelBench's own.
Its modules import packages for LLM querying and logging (dotenv, openai, litellm, requests,
pydantic, tqdm) that the evaluation never uses; where one is missing (the air-gapped node) a
small stand-in is installed so the import succeeds. numpy and torch must be real.

Output: one JSON line per candidate in dice-judge's verdict format (reward/judge/judge.h), and a
summary JSON with the compile and evaluation wall times. Work is resumable: --work keeps the
build cache and the verdicts so far; with --deadline-seconds the run stops starting work when
the time is up, or a build chunk the deadline would cut, and exits 4 ("run again to continue");
a later run with the same --work continues. Exit: 0 all judged, 2 bad flags or input, 3 no GPU /
torch / KernelBench, 4 partial.
"""

import argparse
import copy
import hashlib
import json
import multiprocessing as mp
import os
import shutil
import sys
import time
import types

EXIT_USAGE, EXIT_NO_GPU, EXIT_PARTIAL = 2, 3, 4
SHIMMED = ("dotenv", "openai", "litellm", "requests", "pydantic", "tqdm")


class InputError(Exception):
    """Bad input, named by file and line."""


# --- stand-ins for modules KernelBench imports but the evaluation does not use -------------------


class _ShimModel:
    """Enough of pydantic.BaseModel for KernelExecResult: annotated fields with defaults."""

    def __init__(self, **values):
        for cls in reversed(type(self).__mro__):
            for name in getattr(cls, "__annotations__", {}):
                if hasattr(cls, name):
                    setattr(self, name, copy.deepcopy(getattr(cls, name)))
        for name, value in values.items():
            setattr(self, name, value)


class _ShimProgress:
    """tqdm stand-in: iterates, counts, prints nothing."""

    def __init__(self, iterable=None, *args, **kwargs):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable or [])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        pass

    def close(self):
        pass


def _unused(name):
    def fail(*args, **kwargs):
        raise RuntimeError(f"{name} is a stand-in installed by kb_judge.py (not needed to evaluate)")

    return fail


def install_shims():
    """Installs a stand-in for each module in SHIMMED that cannot be imported; returns their names."""
    installed = []
    for name in SHIMMED:
        try:
            __import__(name)
            continue
        except ImportError:
            pass
        module = types.ModuleType(name)
        module.__dict__["__kb_judge_shim__"] = True
        if name == "dotenv":
            module.load_dotenv = lambda *a, **k: False
        elif name == "openai":
            module.OpenAI = _unused("openai.OpenAI")
        elif name == "litellm":
            module.completion = _unused("litellm.completion")
        elif name == "pydantic":
            module.BaseModel = _ShimModel
        elif name == "tqdm":
            module.tqdm = _ShimProgress
        sys.modules[name] = module
        installed.append(name)
    return installed


def prepare_kernelbench_import(kernelbench_dir):
    """Puts KernelBench's src/ on sys.path (and in the environment, for spawned processes)."""
    src = os.path.join(os.path.abspath(kernelbench_dir), "src")
    if not os.path.isfile(os.path.join(src, "kernelbench", "eval.py")):
        raise InputError(f"--kernelbench {kernelbench_dir}: no src/kernelbench/eval.py there")
    os.environ["DICE_KB_SRC"] = src
    if src not in sys.path:
        sys.path.insert(0, src)
    return install_shims()


# Spawned processes (KernelBench's compile pool, the per-candidate evaluator) import this file
# as __mp_main__ first: give them the same import path and stand-ins before they unpickle work.
if os.environ.get("DICE_KB_SRC") and __name__ != "__main__":
    if os.environ["DICE_KB_SRC"] not in sys.path:
        sys.path.insert(0, os.environ["DICE_KB_SRC"])
    install_shims()


# --- input -------------------------------------------------------------------------------------


def read_manifest(sources_dir):
    """The candidates of dice-judge's --dump-sources folder, in order: dicts with id, variant,
    reference (text), candidate (text or None), error."""
    path = os.path.join(sources_dir, "manifest.jsonl")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not JSON ({e.msg})")
        if not isinstance(entry, dict):
            raise InputError(f"{where}: expected a JSON object")
        for key in ("id", "variant", "reference"):
            if not isinstance(entry.get(key), str):
                raise InputError(f"{where}: \"{key}\" is missing or not a string")
        if "candidate" not in entry:
            raise InputError(f"{where}: \"candidate\" is missing")
        item = {"id": entry["id"], "variant": entry["variant"], "error": entry.get("error", "")}
        files = [("reference", entry["reference"])]
        if entry["candidate"] is not None:
            files.append(("candidate", entry["candidate"]))
        else:
            item["candidate"] = None
        for key, relative in files:
            try:
                with open(os.path.join(sources_dir, relative), encoding="utf-8") as f:
                    item[key] = f.read()
            except OSError as e:
                raise InputError(f"{where}: {key} file {relative}: cannot read ({e.strerror})")
        out.append(item)
    if not out:
        raise InputError(f"{path}: no candidates")
    return out


def select(candidates, limit=None, variant_limit=None):
    """The first `limit` items (all their variants), with broken variants only for the first
    `variant_limit` items; None means all."""
    order = []
    for c in candidates:
        if c["id"] not in order:
            order.append(c["id"])
    items = set(order[:limit] if limit is not None else order)
    with_variants = set(order[:variant_limit] if variant_limit is not None else order)
    return [
        (i, c)
        for i, c in enumerate(candidates)
        if c["id"] in items and (c["variant"] == "original" or c["id"] in with_variants)
    ]


# --- verdicts ----------------------------------------------------------------------------------


def max_difference(metadata):
    values = []
    for text in metadata.get("max_difference", []) or []:
        try:
            values.append(float(text))
        except (TypeError, ValueError):
            pass
    return max(values) if values else None


def verdict_from_result(candidate, result, eval_seconds, timed):
    """dice-judge's verdict line for KernelBench's KernelExecResult given as a dict (compiled,
    correctness, metadata, runtime, ref_runtime), None (KernelBench asked for a retry), or an
    {"error": ...} / {"timeout": ...} dict from the driver."""
    line = {
        "id": candidate["id"],
        "variant": candidate["variant"],
        "compiled": False,
        "correct": False,
        "failure": "none",
        "reward": 0,
        "findings": [],
        "compile_seconds": None,
        "eval_seconds": round(eval_seconds, 3),
        "speedup": None,
        "max_abs_error": None,
        "source_hashes": [],
        "edit": "",
        "log_excerpt": "",
    }
    if result is None:
        line.update(failure="internalError", log_excerpt="KernelBench returned no result (lock)")
        return line
    if "timeout" in result:
        line.update(failure="timeout", log_excerpt=str(result["timeout"])[:600])
        return line
    if "error" in result:
        line.update(failure="crashed", log_excerpt=str(result["error"])[:600])
        return line
    metadata = result.get("metadata") or {}
    line["compiled"] = bool(result.get("compiled"))
    line["correct"] = bool(result.get("compiled") and result.get("correctness"))
    line["max_abs_error"] = max_difference(metadata)
    issue = str(metadata.get("correctness_issue", ""))
    if not line["compiled"]:
        line["failure"] = "compileError"
        line["log_excerpt"] = str(metadata.get("compilation_error", ""))[:600]
    elif line["correct"]:
        line["reward"] = 1
        runtime, ref_runtime = result.get("runtime", -1), result.get("ref_runtime", -1)
        if timed and runtime and runtime > 0 and ref_runtime and ref_runtime > 0:
            line["speedup"] = round(ref_runtime / runtime, 4)
    elif "runtime_error" in metadata:
        line["failure"] = "runtimeError"
        line["log_excerpt"] = str(metadata.get("runtime_error", ""))[:600]
    elif issue.startswith("Output shape mismatch"):
        line["failure"] = "shapeMismatch"
        line["log_excerpt"] = issue[:600]
    else:
        line["failure"] = "incorrect"
        line["log_excerpt"] = (issue + " " + str(metadata.get("correctness_trials", "")))[:600]
    return line


# --- the two phases (run on the GPU node) ------------------------------------------------------


def evaluate_one(kb_src, reference, candidate, build_dir, options):
    """Runs in a fresh spawned process: KernelBench's eval_kernel_against_ref on one candidate.
    Returns the KernelExecResult as a plain dict, or None."""
    if kb_src not in sys.path:
        sys.path.insert(0, kb_src)
    install_shims()
    import torch
    from kernelbench import eval as kb_eval
    from kernelbench import utils as kb_utils

    kb_utils.set_gpu_arch(options["gpu_arch"])  # the same arch list the build cache used
    if options["tolerance"] is not None:
        tolerance = options["tolerance"]
        kb_eval.get_tolerance_for_precision = lambda precision: tolerance
    result = kb_eval.eval_kernel_against_ref(
        reference,
        candidate,
        seed_num=42,
        num_correct_trials=options["trials"],
        num_perf_trials=options["perf_trials"],
        measure_performance=options["timing"],
        build_dir=build_dir,
        device=torch.device("cuda:0"),
        backend="cuda",
        precision=torch.float32,
    )
    if result is None:
        return None
    return {
        "compiled": result.compiled,
        "correctness": result.correctness,
        "metadata": {k: str(v) if not isinstance(v, (list, bool)) else v
                     for k, v in (result.metadata or {}).items()},
        "runtime": result.runtime,
        "ref_runtime": getattr(result, "ref_runtime", -1.0),
    }


def evaluate_in_fresh_process(kb_src, candidate, build_dir, options):
    started = time.monotonic()
    context = mp.get_context("spawn")
    with context.Pool(1) as pool:
        job = pool.apply_async(
            evaluate_one, (kb_src, candidate["reference"], candidate["candidate"], build_dir, options)
        )
        try:
            result = job.get(timeout=options["timeout"])
        except mp.TimeoutError:
            pool.terminate()
            result = {"timeout": f"evaluation passed {options['timeout']} s"}
        except Exception as e:  # the child died or raised: KernelBench's script counts it failed
            result = {"error": f"{type(e).__name__}: {e}"}
    return result, time.monotonic() - started


def compile_chunk(work, chunk, options):
    """KernelBench's batch_compile over `chunk` [(index, candidate)], files laid out as its
    scripts expect them (runs/<run>/level_<L>_problem_<P>_sample_<S>_kernel.py)."""
    from kernelbench import compile as kb_compile

    run_dir = os.path.join(work, "runs", "dice")
    os.makedirs(run_dir, exist_ok=True)
    for index, candidate in chunk:
        # A build of this chunk that a time limit killed left half a build folder (its ninja
        # lock, no .so): KernelBench then waited on it and failed builds it retried (seen on the
        # H200 on 2026-11-30: docs/BENCHMARKS.md, "The 60 on the H200 with KernelBench in the same
        # run", the first of the two).
        shutil.rmtree(build_dir_of(work, index), ignore_errors=True)
        path = os.path.join(run_dir, f"level_0_problem_{index}_sample_0_kernel.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(candidate["candidate"])
    config = {
        "verbose": False,
        "gpu_arch": options["gpu_arch"],
        "kernel_eval_build_dir": os.path.join(work, "cache"),
        "run_name": "dice",
        "runs_dir": os.path.join(work, "runs"),
        "level": 0,
        "num_cpu_workers": options["compile_workers"],
        "timeout": options["timeout"],
    }
    kb_compile.batch_compile([(index, 0) for index, _ in chunk], config)


def chunk_seconds_estimate(state, candidates):
    """Seconds a build chunk of `candidates` should take, from the chunks built so far (0 before
    the first: nothing to go by)."""
    built = len(state["compiled"])
    return state["compile_seconds"] / built * candidates if built else 0.0


def build_dir_of(work, index):
    return os.path.join(work, "cache", "dice", str(index), "0")


# --- driver ------------------------------------------------------------------------------------


def load_state(work, fingerprint):
    path = os.path.join(work, "state.json")
    state = {"fingerprint": fingerprint, "compiled": [], "compile_seconds": 0.0,
             "eval_seconds": 0.0}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        if saved.get("fingerprint") != fingerprint:
            raise InputError(f"{work}: holds another set of candidates (or other options); "
                             "remove it or give another --work")
        state.update(saved)
    return state


def save_state(work, state):
    path = os.path.join(work, "state.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(path + ".tmp", path)


def load_verdicts(work):
    verdicts = {}
    path = os.path.join(work, "verdicts.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    entry = json.loads(line)
                    verdicts[entry["index"]] = entry["verdict"]
    return verdicts


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernelbench", required=True, help="KernelBench's source folder (has src/)")
    p.add_argument("--sources", required=True, help="dice-judge --dump-sources folder")
    p.add_argument("--work", required=True, help="build cache and resumable state")
    p.add_argument("--out", required=True, help="verdict lines (dice-judge's format)")
    p.add_argument("--summary-out", help="summary JSON")
    p.add_argument("--trials", type=int, default=5, help="correctness trials (default 5)")
    p.add_argument("--tolerance", default="0.01",
                   help="atol = rtol; 'kernelbench' keeps its own per precision (default 0.01)")
    p.add_argument("--timing", choices=("on", "off"), default="off")
    p.add_argument("--perf-trials", type=int, default=100, help="timed runs (default 100)")
    p.add_argument("--compile-workers", type=int, default=16, help="build processes (default 16)")
    p.add_argument("--compile-chunk", type=int, default=0,
                   help="candidates per batch_compile call, 0 = all at once; smaller chunks let a "
                        "deadline stop between them (default 0)")
    p.add_argument("--gpu-arch", default="Hopper", help="KernelBench's arch name (default Hopper)")
    p.add_argument("--timeout", type=int, default=180, help="per candidate, s (default 180)")
    p.add_argument("--limit", type=int, help="only the first N items")
    p.add_argument("--variant-limit", type=int, help="broken variants of the first N items only")
    p.add_argument("--deadline-seconds", type=float,
                   help="start no new work after this many seconds; exit 4 if unfinished")
    args = p.parse_args(argv)
    for name in ("trials", "perf_trials", "compile_workers", "timeout"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} {getattr(args, name)}: expected an integer >= 1")
    for name in ("limit", "variant_limit", "compile_chunk"):
        value = getattr(args, name)
        if value is not None and value < 0:
            p.error(f"--{name.replace('_', '-')} {value}: expected an integer >= 0")
    if args.tolerance == "kernelbench":
        args.tolerance_value = None
    else:
        try:
            args.tolerance_value = float(args.tolerance)
        except ValueError:
            p.error(f"--tolerance {args.tolerance}: expected a number or 'kernelbench'")
        if not args.tolerance_value > 0:
            p.error(f"--tolerance {args.tolerance}: expected a positive number")
    return args


def write_outputs(args, chosen, verdicts, state, complete):
    with open(args.out, "w", encoding="utf-8") as f:
        for index, _ in chosen:
            if index in verdicts:
                f.write(json.dumps(verdicts[index]) + "\n")
    judged = sum(1 for index, _ in chosen if index in verdicts)
    seconds = state["compile_seconds"] + state["eval_seconds"]
    summary = {
        "candidates": len(chosen),
        "judged": judged,
        "correct": sum(1 for i, _ in chosen if verdicts.get(i, {}).get("correct")),
        "compile_seconds": round(state["compile_seconds"], 2),
        "eval_seconds": round(state["eval_seconds"], 2),
        "seconds": round(seconds, 2),
        "per_minute": round(60.0 * judged / seconds, 3) if seconds > 0 and complete else None,
        "complete": complete,
        "tolerance": args.tolerance,
        "trials": args.trials,
        "timing": args.timing,
    }
    if args.summary_out:
        with open(args.summary_out, "w", encoding="utf-8") as f:
            f.write(json.dumps(summary) + "\n")
    return summary


def main(argv):
    # The resumable run's two stages (build, then judge one at a time) share its state, deadline
    # and verdict log; kept in one function so the resume logic reads top to bottom.
    args = parse_args(argv)
    started = time.monotonic()
    try:
        candidates = read_manifest(args.sources)
        shims = prepare_kernelbench_import(args.kernelbench)
    except InputError as e:
        print(f"kb_judge.py: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        import torch
    except ImportError as e:
        print(f"kb_judge.py: no torch in {sys.executable} ({e})", file=sys.stderr)
        return EXIT_NO_GPU
    if not torch.cuda.is_available():
        print("kb_judge.py: torch sees no CUDA GPU: KernelBench cannot evaluate here", file=sys.stderr)
        return EXIT_NO_GPU
    if shims:
        print(f"kb_judge.py: stand-ins for unused imports: {', '.join(shims)}", file=sys.stderr)

    chosen = select(candidates, args.limit, args.variant_limit)
    options = {
        "trials": args.trials, "perf_trials": args.perf_trials, "timing": args.timing == "on",
        "tolerance": args.tolerance_value, "gpu_arch": [args.gpu_arch], "timeout": args.timeout,
        "compile_workers": args.compile_workers,
    }
    fingerprint = hashlib.sha256(json.dumps(
        [[i, c["id"], c["variant"], c["candidate"], c["reference"]] for i, c in chosen]
        + [options], sort_keys=True).encode()).hexdigest()
    os.makedirs(args.work, exist_ok=True)
    try:
        state = load_state(args.work, fingerprint)
    except InputError as e:
        print(f"kb_judge.py: {e}", file=sys.stderr)
        return EXIT_USAGE
    verdicts = load_verdicts(args.work)

    def out_of_time(more_seconds=0.0):
        return args.deadline_seconds is not None and \
            time.monotonic() - started + more_seconds > args.deadline_seconds

    # 1. The build cache (candidates that have a file; the rest fail at evaluation as in KB).
    to_compile = [(i, c) for i, c in chosen
                  if c["candidate"] is not None and i not in state["compiled"] and i not in verdicts]
    chunk = args.compile_chunk or len(to_compile) or 1
    for at in range(0, len(to_compile), chunk):
        part = to_compile[at:at + chunk]
        # Not a chunk the deadline would cut: at the rate of the builds so far (the time limit
        # around this script kills it mid-build otherwise).
        if out_of_time(chunk_seconds_estimate(state, len(part))):
            break
        print(f"kb_judge.py: building {len(part)} candidates "
              f"({at + len(part)}/{len(to_compile)})", file=sys.stderr)
        t0 = time.monotonic()
        compile_chunk(args.work, part, options)
        state["compile_seconds"] += time.monotonic() - t0
        state["compiled"] += [i for i, _ in part]
        save_state(args.work, state)

    # 2. One fresh process per candidate, one at a time on the GPU.
    all_built = all(i in state["compiled"] or c["candidate"] is None or i in verdicts
                    for i, c in chosen)
    with open(os.path.join(args.work, "verdicts.jsonl"), "a", encoding="utf-8") as log:
        for index, candidate in chosen:
            if not all_built or out_of_time():
                break
            if index in verdicts:
                continue
            if candidate["candidate"] is None:
                result, seconds = {"error": candidate["error"]}, 0.0
            else:
                result, seconds = evaluate_in_fresh_process(
                    os.environ["DICE_KB_SRC"], candidate, build_dir_of(args.work, index), options)
            state["eval_seconds"] += seconds
            verdict = verdict_from_result(candidate, result, seconds, options["timing"])
            verdicts[index] = verdict
            log.write(json.dumps({"index": index, "verdict": verdict}) + "\n")
            log.flush()
            save_state(args.work, state)
            print(f"kb_judge.py: {candidate['id']} {candidate['variant']}: "
                  f"{'correct' if verdict['correct'] else verdict['failure']} ({seconds:.1f} s)",
                  file=sys.stderr)

    complete = all(i in verdicts for i, _ in chosen)
    summary = write_outputs(args, chosen, verdicts, state, complete)
    print(f"kb_judge.py: {summary['judged']} of {summary['candidates']} judged, "
          f"{summary['correct']} correct; compile {summary['compile_seconds']} s, "
          f"evaluation {summary['eval_seconds']} s"
          + (f": {summary['per_minute']} per minute" if complete else
             ": unfinished, run again with the same --work to continue"), file=sys.stderr)
    return 0 if complete else EXIT_PARTIAL


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
