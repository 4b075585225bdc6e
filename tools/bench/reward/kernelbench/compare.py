#!/usr/bin/env python3
"""Compares dice-judge's verdicts with KernelBench's on the same candidates.

  compare.py --dice DICE.jsonl [--dice MORE.jsonl ...] --kernelbench KB.jsonl
             [--known-differences known_differences.json]
             [--dice-summary NAME=SUMMARY.json ...] [--kernelbench-summary KB_SUMMARY.json]
             [--markdown OUT.md]

Verdict = the `correct` field (reward 1 or 0), keyed by (id, variant). Prints the candidates
where the two disagree, with the failure class each gave, those only one side judged, the broken
variants either side called correct (an edit that broke nothing, or a judge that missed it), and
the throughput of each run (candidates per minute). A disagreement listed in the
known-differences file (same id, variant and both verdicts) is shown with its reason and does
not fail the comparison. Exit: 0 no other disagreement, 1 some (or dice gave one candidate two
different verdicts across its runs), 2 bad input.
"""

import argparse
import json
import sys


class InputError(Exception):
    pass


def read_verdicts(path):
    """{(id, variant): verdict dict} from a JSON-lines file; errors name file:line."""
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{number}: not JSON ({e.msg})")
        if not isinstance(v, dict):
            raise InputError(f"{path}:{number}: expected a JSON object")
        for key, kind in (("id", str), ("variant", str), ("correct", bool)):
            if not isinstance(v.get(key), kind):
                raise InputError(f"{path}:{number}: \"{key}\" is missing or not a {kind.__name__}")
        key = (v["id"], v["variant"])
        if key in out:
            raise InputError(f"{path}:{number}: {key[0]} {key[1]} appears twice")
        out[key] = v
    return out


def merge_dice(runs):
    """One verdict per candidate over several dice runs, and the candidates whose verdicts
    differ between runs (the judge should be deterministic on these)."""
    merged, unstable = {}, []
    for run in runs:
        for key, v in run.items():
            if key in merged and merged[key]["correct"] != v["correct"]:
                unstable.append(key)
            merged.setdefault(key, v)
    return merged, sorted(set(unstable))


def read_json(path):
    """The JSON document in `path`; InputError naming the file (and line) when it cannot be."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not JSON ({e.msg})")


def read_known(path):
    """{(id, variant): entry} from a JSON list of {id, variant, dice, kernelbench, reason}."""
    if not path:
        return {}
    entries = read_json(path)
    if not isinstance(entries, list):
        raise InputError(f"{path}: expected a JSON list")
    out = {}
    for n, e in enumerate(entries):
        for key, kind in (("id", str), ("variant", str), ("dice", bool), ("kernelbench", bool),
                          ("reason", str)):
            if not isinstance(e, dict) or not isinstance(e.get(key), kind):
                raise InputError(f"{path}: entry {n}: \"{key}\" is missing or not a {kind.__name__}")
        out[(e["id"], e["variant"])] = e
    return out


def verdict_text(v):
    return "correct" if v["correct"] else v.get("failure", "incorrect")


def compare(dice, kernelbench, known):
    """The comparison as a dict: agree, explained, unexplained, only_dice, only_kernelbench,
    variants_correct."""
    both = sorted(set(dice) & set(kernelbench))
    result = {"agree": [], "explained": [], "unexplained": [],
              "only_dice": sorted(set(dice) - set(kernelbench)),
              "only_kernelbench": sorted(set(kernelbench) - set(dice)), "variants_correct": []}
    for key in both:
        d, k = dice[key], kernelbench[key]
        if key[1] != "original" and (d["correct"] or k["correct"]):
            result["variants_correct"].append((key, verdict_text(d), verdict_text(k)))
        if d["correct"] == k["correct"]:
            result["agree"].append(key)
            continue
        row = (key, verdict_text(d), verdict_text(k))
        entry = known.get(key)
        if entry and entry["dice"] == d["correct"] and entry["kernelbench"] == k["correct"]:
            result["explained"].append(row + (entry["reason"],))
        else:
            result["unexplained"].append(row)
    return result


def read_summary(path):
    summary = read_json(path)
    for key in ("candidates", "seconds"):
        if not isinstance(summary.get(key), (int, float)):
            raise InputError(f"{path}: \"{key}\" is missing or not a number")
    return summary


def throughput_rows(dice_summaries, kb_summary):
    """[(name, candidates, seconds, per minute, note)]."""
    rows = []
    for name, s in dice_summaries:
        per_minute = 60.0 * s["candidates"] / s["seconds"] if s["seconds"] > 0 else 0.0
        note = f"{s.get('cache_hits', 0)} compile-cache hits"
        if s.get("prepare_seconds"):
            note += (f"; the worker's start (precompiled headers) took {s['prepare_seconds']:.1f}"
                     " s before these")
        if s.get("split_fallbacks"):
            note += f"; {s['split_fallbacks']} not split (built with torch headers)"
        if s.get("lean_header_fallbacks") or s.get("full_header_builds"):
            note += (f"; header retries: {s.get('lean_header_fallbacks', 0)} lean -> slim, "
                     f"{s.get('full_header_builds', 0)} slim -> full")
        rows.append((f"dice-judge {name}", s["candidates"], s["seconds"], per_minute, note))
    if kb_summary:
        judged = kb_summary.get("judged", kb_summary["candidates"])
        per_minute = 60.0 * judged / kb_summary["seconds"] if kb_summary["seconds"] > 0 else 0.0
        note = (f"compile {kb_summary.get('compile_seconds', 0):.0f} s + evaluation "
                f"{kb_summary.get('eval_seconds', 0):.0f} s")
        if not kb_summary.get("complete", True):
            note += f"; unfinished ({judged} of {kb_summary['candidates']})"
        rows.append(("KernelBench", judged, kb_summary["seconds"], per_minute, note))
    return rows


def report(result, rows):
    """The comparison as Markdown text."""
    out = []
    n_both = len(result["agree"]) + len(result["explained"]) + len(result["unexplained"])
    out.append(f"Verdicts compared: {n_both}; agree: {len(result['agree'])}; known differences: "
               f"{len(result['explained'])}; other differences: {len(result['unexplained'])}.")
    if result["unexplained"] or result["explained"]:
        out += ["", "| id | variant | dice | KernelBench | known reason |", "|---|---|---|---|---|"]
        for (key, d, k) in result["unexplained"]:
            out.append(f"| {key[0]} | {key[1]} | {d} | {k} | **none: a real disagreement** |")
        for (key, d, k, reason) in result["explained"]:
            out.append(f"| {key[0]} | {key[1]} | {d} | {k} | {reason} |")
    if result["variants_correct"]:
        out += ["", "Broken variants called correct (the edit broke nothing, or a judge missed it):"]
        for (key, d, k) in result["variants_correct"]:
            out.append(f"- {key[0]} {key[1]}: dice {d}, KernelBench {k}")
    if result["only_dice"] or result["only_kernelbench"]:
        out += ["", f"Judged by dice only: {len(result['only_dice'])}; by KernelBench only: "
                    f"{len(result['only_kernelbench'])}."]
    if rows:
        out += ["", "| run | candidates | seconds | per minute | note |", "|---|---|---|---|---|"]
        for name, n, seconds, per_minute, note in rows:
            out.append(f"| {name} | {n} | {seconds:.1f} | {per_minute:.1f} | {note} |")
        kb = [r for r in rows if r[0] == "KernelBench"]
        if kb and kb[0][3] > 0:
            ratios = [f"{name}: {per_minute / kb[0][3]:.1f}x" for name, _, _, per_minute, _ in rows
                      if name != "KernelBench"]
            out += ["", "Rate against KernelBench's (candidates per minute; the sets may differ, "
                        "see the candidates column): " + "; ".join(ratios) + "."]
        for name, n, seconds, per_minute, _ in rows:
            if name == "dice-judge cold":
                out += ["", f"Target (issue 5): 60 candidates in under 95 s cold, i.e. at least "
                            f"37.9 per minute; measured {per_minute:.1f} per minute "
                            f"({n} in {seconds:.1f} s): "
                            f"{'met' if per_minute >= 60 / 95 * 60 else 'not met'}."]
    return "\n".join(out) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dice", action="append", required=True, help="dice-judge verdict lines")
    p.add_argument("--kernelbench", required=True, help="kb_judge.py verdict lines")
    p.add_argument("--known-differences", help="JSON list of explained differences")
    p.add_argument("--dice-summary", action="append", default=[],
                   help="NAME=PATH of a dice-judge --summary-out (e.g. cold=cold.json)")
    p.add_argument("--kernelbench-summary", help="kb_judge.py --summary-out")
    p.add_argument("--markdown", help="also write the report here")
    args = p.parse_args(argv)
    for spec in args.dice_summary:
        if "=" not in spec or not spec.split("=", 1)[0]:
            p.error(f"--dice-summary {spec}: expected NAME=PATH")
    return args


def main(argv):
    args = parse_args(argv)
    try:
        dice, unstable = merge_dice([read_verdicts(p) for p in args.dice])
        kernelbench = read_verdicts(args.kernelbench)
        known = read_known(args.known_differences)
        dice_summaries = [(s.split("=", 1)[0], read_summary(s.split("=", 1)[1]))
                          for s in args.dice_summary]
        kb_summary = read_summary(args.kernelbench_summary) if args.kernelbench_summary else None
    except InputError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    result = compare(dice, kernelbench, known)
    text = report(result, throughput_rows(dice_summaries, kb_summary))
    if unstable:
        text += "\ndice gave these candidates different verdicts in different runs: " + \
                ", ".join(f"{i} {v}" for i, v in unstable) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    if not (result["agree"] or result["explained"] or result["unexplained"]):
        print("compare.py: no candidate was judged by both", file=sys.stderr)
        return 2
    return 1 if result["unexplained"] or unstable else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
