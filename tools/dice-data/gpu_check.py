"""Compiles and runs generated pairs on a CUDA GPU, a quick stand-in for dice-judge where dice is
not built (dice-judge --items verify_items.json is the real check: sandbox, split build, anti-cheat).

  python3 gpu_check.py verify_items.json [--skip N] [--limit N] [--batch 100] [--jobs 16]
                       [--eval-jobs 4] [--json OUT.json]

Each candidate file is executed with load_inline recorded instead of run; the recorded CUDA
sources of up to --batch candidates are compiled as one extension (each candidate in a namespace
of its own, so that one compile of torch's headers serves many), --jobs extensions at a time.
Then, as the judge does: Model and ModelNew built from get_init_inputs() under one seed, 3 input
sets from get_inputs() and one per shape variant (module-level sizes set, get_init_inputs()
unchanged), outputs of the reference's dtype and shape, allclose at atol = rtol = 1e-2 (atol
scaled down for outputs that are all near zero, as judge.py's informative_atol). Every batch is
evaluated in a process of its own (a CUDA error poisons its context). Prints one line per failure
and a summary by family and dtype; exit status 1 on any failure.
"""

import argparse
import concurrent.futures as futures
import json
import os
import re
import sys
import tempfile
import time
import types

HEADERS = ("#include <torch/extension.h>\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n"
           "#include <cuda_bf16.h>\n")
TOL = 1e-2


def record(item):
    """The load_inline arguments of a candidate, from executing it with load_inline recorded."""
    import torch.utils.cpp_extension as ce
    calls = []
    real = ce.load_inline

    def fake(**kwargs):
        calls.append(kwargs)
        return types.SimpleNamespace()
    ce.load_inline = fake
    try:
        exec(compile(item["cuda_code"], item["id"], "exec"), {"__name__": "candidate"})
    finally:
        ce.load_inline = real
    if len(calls) != 1:
        raise ValueError("%d load_inline calls" % len(calls))
    return calls[0]


def batch_sources(items):
    """cuda and cpp sources of one extension holding every candidate of `items`."""
    cuda, cpp, binds = [HEADERS], [], []
    for k, item in enumerate(items):
        call = item["_call"]
        body = "\n".join(l for l in call["cuda_sources"].split("\n")
                         if not l.startswith("#include"))
        cuda.append("namespace dd%d {\n%s\n}  // namespace dd%d\n" % (k, body, k))
        cpp.append("namespace dd%d {\n%s\n}\n" % (k, call["cpp_sources"]))
        for f in call["functions"]:
            binds.append('  m.def("dd%d_%s", &dd%d::%s);' % (k, f, k, f))
    cpp.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n%s\n}\n" % "\n".join(binds))
    return "".join(cuda), "".join(cpp)


def build(args):
    """Builds (or, when up to date, just loads) one batch's extension; returns the module."""
    name, items, build_dir = args
    from torch.utils.cpp_extension import load_inline
    cuda, cpp = batch_sources(items)
    os.makedirs(build_dir, exist_ok=True)
    return load_inline(name=name, cpp_sources=cpp, cuda_sources=cuda, functions=None,
                       build_directory=build_dir, verbose=False)


def build_only(args):
    start = time.time()
    try:
        build(args)
        return args[0], None, time.time() - start
    except Exception as e:  # noqa: BLE001 (reported)
        return args[0], "%s: %s" % (type(e).__name__, str(e)[-3000:]), time.time() - start


def compare(torch, got, want, where):
    if not isinstance(got, torch.Tensor):
        raise AssertionError("%s: not a tensor" % where)
    if got.dtype != want.dtype or tuple(got.shape) != tuple(want.shape):
        raise AssertionError("%s: %s %s, reference %s %s" % (
            where, got.dtype, tuple(got.shape), want.dtype, tuple(want.shape)))
    w, g = want.double(), got.double()
    largest = float(w.abs().max()) if w.numel() else 0.0
    atol = TOL * largest if 0 < largest and largest * (1 - TOL) <= TOL else TOL
    bad = int((~torch.isclose(g, w, atol=atol, rtol=TOL, equal_nan=True)).sum())
    if bad:
        raise AssertionError("%s: %d of %d values off (max abs error %g, atol %g)" % (
            where, bad, w.numel(), float((g - w).abs().max()), atol))
    return float((g - w).abs().max()) if w.numel() else 0.0


def check_item(torch, item, module, k):
    ref_ns = {"__name__": "reference"}
    exec(compile(item["pytorch_code"], item["id"], "exec"), ref_ns)
    proxy = types.SimpleNamespace(**{f: getattr(module, "dd%d_%s" % (k, f))
                                     for f in item["_call"]["functions"]})
    import torch.utils.cpp_extension as ce
    real = ce.load_inline
    ce.load_inline = lambda **kwargs: proxy
    cand_ns = {"__name__": "candidate"}
    try:
        exec(compile(item["cuda_code"], item["id"], "exec"), cand_ns)
    finally:
        ce.load_inline = real
    init = list(ref_ns["get_init_inputs"]())
    torch.manual_seed(1234)
    ref = ref_ns["Model"](*init).cuda()
    torch.manual_seed(1234)
    new = cand_ns["ModelNew"](*init).cuda()
    err = 0.0

    def one(where, seed):
        torch.manual_seed(seed)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref_ns["get_inputs"]()]
        with torch.no_grad():
            want = ref(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            # The reference's freed intermediates may hold the answer: fill every free block of
            # the output's size with NaN first, so that an output the kernel leaves unwritten
            # cannot pass (the runner poisons memory for the same reason).
            poison = [torch.full_like(want, float("nan")) for _ in range(8)]
            del poison
            got = new(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        torch.cuda.synchronize()
        return compare(torch, got, want, where)

    for trial in range(3):
        err = max(err, one("trial %d" % trial, 100 + trial))
    for v, variant in enumerate(item["shape_variants"]):
        saved = {n: ref_ns[n] for n in variant}
        ref_ns.update(variant)
        try:
            if list(ref_ns["get_init_inputs"]()) != init:
                raise AssertionError("variant %s changes get_init_inputs()" % variant)
            err = max(err, one("variant %s" % variant, 200 + v))
        finally:
            ref_ns.update(saved)
    return err


def evaluate(args):
    """Loads one built batch and checks its candidates: [(id, error or None, max abs err)]."""
    name, items, build_dir = args
    import torch
    module = build(args)
    out = []
    for k, item in enumerate(items):
        try:
            out.append((item["id"], None, check_item(torch, item, module, k)))
        except Exception as e:  # noqa: BLE001 (reported per candidate)
            out.append((item["id"], "%s: %s" % (type(e).__name__, str(e)[:500]), None))
            if "CUDA" in str(e) or "cuda" in type(e).__name__.lower():
                break  # the context may be poisoned: the rest of the batch is not judged
    return out


def dtype_of(code):
    if "bfloat16" in code:
        return "bfloat16"
    return "float16" if (".half()" in code or "float16" in code) else "float32"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("items")
    p.add_argument("--limit", type=int, default=0, help="check only the first N items")
    p.add_argument("--skip", type=int, default=0, help="leave out the first N items")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    p.add_argument("--eval-jobs", type=int, default=4, help="batches evaluated at a time")
    p.add_argument("--build-dir", default=os.path.join(tempfile.gettempdir(), "dice-gpu-check"))
    p.add_argument("--json", default="")
    args = p.parse_args()
    start = time.time()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    os.environ.setdefault("MAX_JOBS", "2")
    with open(args.items) as f:
        items = json.load(f)[args.skip:]
    if args.limit:
        items = items[:args.limit]
    failures, results = [], {}
    usable = []
    for item in items:
        try:
            item["_call"] = record(item)
            usable.append(item)
        except Exception as e:  # noqa: BLE001
            failures.append((item["id"], "does not execute: %s" % e))
    batches = [("dice_gpu_check_%d" % (i // args.batch), usable[i:i + args.batch],
                os.path.join(args.build_dir, "b%d" % (i // args.batch)))
               for i in range(0, len(usable), args.batch)]
    built = []
    with futures.ProcessPoolExecutor(args.jobs) as pool:
        pending = {pool.submit(build_only, b): b for b in batches}
        for fut in futures.as_completed(pending):
            name, error, seconds = fut.result()
            b = pending[fut]
            print("built %s (%d candidates) in %.0f s%s" % (name, len(b[1]), seconds,
                  "" if not error else ": FAILED"), flush=True)
            if error:
                failures.extend((it["id"], "batch build failed: " + error[-800:]) for it in b[1])
            else:
                built.append(b)
    # A fresh process per batch (max_tasks_per_child=1): a CUDA error poisons only its batch.
    with futures.ProcessPoolExecutor(args.eval_jobs, max_tasks_per_child=1) as pool:
        pending = {pool.submit(evaluate, b): b for b in sorted(built)}
        for fut in futures.as_completed(pending):
            b = pending[fut]
            try:
                for cid, error, err in fut.result():
                    results[cid] = (error, err)
                print("evaluated %s at %.0f s" % (b[0], time.time() - start), flush=True)
            except Exception as e:  # noqa: BLE001
                failures.extend((it["id"], "evaluation crashed: %s" % e) for it in b[1])
    by = {}
    worst = {}
    for item in usable:
        if item["id"] not in results:
            continue
        error, err = results[item["id"]]
        key = "%s/%s" % (item["id"].split("-")[0], dtype_of(item["pytorch_code"]))
        ok, n = by.get(key, (0, 0))
        by[key] = (ok + (error is None), n + 1)
        if error:
            failures.append((item["id"], error))
        elif err is not None:
            worst[key] = max(worst.get(key, 0.0), err)
    for cid, error in failures:
        print("FAIL %s: %s" % (cid, error))
    passed = sum(ok for ok, _ in by.values())
    print("passed %d of %d judged (%d items, %d failures) in %.0f s" % (
        passed, sum(n for _, n in by.values()), len(items), len(failures), time.time() - start))
    for key in sorted(by):
        print("  %-18s %d/%d  max abs error %.3g" % (key, by[key][0], by[key][1],
                                                     worst.get(key, 0.0)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"by": by, "worst": worst, "failures": failures}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
