"""Checks a dice-data curriculum folder with Python (dice_data_cli_test.cc runs it).

  python3 dice_data_check_references.py DIR [--sample N] [--static-check PATH/static_check.py]

Always: every pytorch_code and cuda_code parses, and ModelNew takes Model's constructor
arguments. With --sample N (needs torch): N tasks spread over families and dtypes are run as the
judge runs a reference: Model(*get_init_inputs()) on get_inputs(), then for each shape variant
with the module-level sizes set (get_init_inputs() must not change) and get_inputs() drawn again;
the output must have the input's dtype and the shape the family implies. float16 tasks whose op
has no CPU kernel in this torch are reported and not run (the GPU judge runs them).
With --static-check: the reward service's static anti-cheat checks find nothing in any
candidate. Prints a summary; exit status 1 on any failure.
"""

import argparse
import ast
import json
import os
import random
import sys

TASK_FILES = ["rl_infill.json", "rl_e2e.json", "heldout_infill.json", "heldout_e2e.json",
              "heldout_indist_infill.json", "heldout_indist_e2e.json"]


def init_args(source, cls):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return [a.arg for a in item.args.args]
    return None


def load(folder):
    tasks = []
    for name in TASK_FILES + ["sft.json"]:
        with open(os.path.join(folder, name)) as f:
            for t in json.load(f):
                t["_file"] = name
                if "cuda_code" not in t:
                    t["cuda_code"] = t["prefix"] + t["middle"] + t["suffix"]
                tasks.append(t)
    return tasks


def check_syntax(tasks, failures):
    for t in tasks:
        try:
            ref = init_args(t["pytorch_code"], "Model")
            new = init_args(t["cuda_code"], "ModelNew")
        except SyntaxError as e:
            failures.append("%s: %s" % (t["id"], e))
            continue
        if ref is None or ref != new:
            failures.append("%s: Model%s vs ModelNew%s" % (t["id"], ref, new))


def sample(tasks, n):
    """n tasks with shape variants, round-robin over (family, dtype) groups."""
    rng = random.Random(0)
    groups = {}
    for t in tasks:
        if "shape_variants" not in t:
            continue
        dtype = ("bfloat16" if "bfloat16" in t["pytorch_code"] else
                 "float16" if ".half()" in t["pytorch_code"] or "float16" in t["pytorch_code"]
                 else "float32")
        groups.setdefault((t["id"].split("-")[0], dtype), []).append(t)
    for g in groups.values():
        rng.shuffle(g)
    keys = sorted(groups)
    picked, i = [], 0
    while len(picked) < n and any(groups.values()):
        g = groups[keys[i % len(keys)]]
        if g:
            picked.append(g.pop())
        i += 1
    return picked


class CpuUnsupported(Exception):
    pass


def forward(torch, model, inputs, family, code):
    with torch.no_grad():
        try:
            out = model(*inputs)
        except RuntimeError as e:
            if "not implemented for 'Half'" in str(e):
                raise CpuUnsupported(str(e))
            raise
    x = inputs[0]
    if not isinstance(out, torch.Tensor):
        raise AssertionError("the output is not a tensor")
    if out.dtype != x.dtype:
        raise AssertionError("output dtype %s, input %s" % (out.dtype, x.dtype))
    if family == "reduce":
        keep = "keepdim=True" in code
        want = tuple(x.shape[:-1]) + ((1,) if keep else ())
    else:
        want = tuple(x.shape)
    if tuple(out.shape) != want:
        raise AssertionError("output shape %s, expected %s" % (tuple(out.shape), want))


def run_task(torch, t):
    """'ran' or 'cpu-unsupported'; raises on a broken reference."""
    family = t["id"].split("-")[0]
    ns = {"__name__": "reference"}
    exec(compile(t["pytorch_code"], t["id"], "exec"), ns)
    init = list(ns["get_init_inputs"]())
    torch.manual_seed(0)
    model = ns["Model"](*init)
    inputs = ns["get_inputs"]()
    outcome = "ran"
    try:
        forward(torch, model, inputs, family, t["pytorch_code"])
    except CpuUnsupported:
        outcome = "cpu-unsupported"
    variants = t["shape_variants"]
    if not 2 <= len(variants) <= 3:
        raise AssertionError("%d shape variants" % len(variants))
    for variant in variants:
        saved = {}
        for name, value in variant.items():
            old = ns.get(name)
            if not isinstance(old, int) or isinstance(old, bool):
                raise AssertionError("variant %s: %s is no module-level integer" % (variant, name))
            saved[name] = old
        try:
            ns.update(variant)
            if list(ns["get_init_inputs"]()) != init:
                raise AssertionError("variant %s changes get_init_inputs()" % variant)
            varied = ns["get_inputs"]()
            shapes = [tuple(v.shape) for v in varied if isinstance(v, torch.Tensor)]
            for name, value in variant.items():
                if not any(value in s for s in shapes):
                    raise AssertionError("variant %s: no input has size %s=%d (shapes %s)"
                                         % (variant, name, value, shapes))
            if outcome == "ran":
                forward(torch, model, varied, family, t["pytorch_code"])
        finally:
            ns.update(saved)
    return outcome


def static_checks(path, folder, failures):
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    import static_check  # noqa: E402 (the reward service's checker)
    with open(os.path.join(folder, "verify_items.json")) as f:
        items = json.load(f)
    for item in items:
        r = static_check.check(item["cuda_code"])
        if r.get("syntax_error") or r["findings"] or not r["kernels"] or not r["launched"]:
            failures.append("%s: static check: %s" % (item["id"], json.dumps(r)[:400]))
    return len(items)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--static-check", default="")
    args = p.parse_args()
    tasks = load(args.folder)
    failures = []
    check_syntax(tasks, failures)
    print("parsed %d items" % len(tasks))
    if args.static_check:
        n = static_checks(args.static_check, args.folder, failures)
        if not failures:
            print("static checks passed on %d candidates" % n)
    if args.sample:
        import torch
        picked = sample(tasks, args.sample)
        outcomes = {}
        for t in picked:
            try:
                o = run_task(torch, t)
                outcomes[o] = outcomes.get(o, 0) + 1
            except Exception as e:  # noqa: BLE001 (every failure is reported)
                failures.append("%s (%s): %s: %s" % (t["id"], t["_file"], type(e).__name__, e))
        families = sorted({t["id"].split("-")[0] for t in picked})
        print("checked %d tasks (%s) over %s" % (len(picked), ", ".join(
            "%d %s" % (v, k) for k, v in sorted(outcomes.items())), ", ".join(families)))
        if len(picked) < args.sample:
            failures.append("only %d tasks to sample" % len(picked))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
