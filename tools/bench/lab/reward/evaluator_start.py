"""What the start of an evaluation process costs, by phase: the work reward/python/runner.py (the evaluation process that loads candidate code)
does before a candidate arrives (import torch and its extension loader, the CUDA context, then
the kernel check's set-up: warming torch's profiler, or attaching dice's launch probe), and the
kernel check's first session on one small op. N processes start at once, as a reward worker's
GPU slots start theirs; the table gives each phase's median and largest wall and CPU seconds.

Usage (on a GPU node, the PyTorch venv's python):
  python3 tools/bench/lab/reward/evaluator_start.py --processes 16 --kernel-check profiler,cupti \
      --launch-probe build-gpu/reward/dice_launch_probe.so
Without a CUDA device (--device cpu) only the imports are measured, and the table says so.
Exit: 0, 2 usage, 77 no torch in this python (a skip for CTest).
"""

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "reward", "python"))


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Laps:
    """Wall and CPU seconds of consecutive phases."""

    def __init__(self):
        self.record = {}
        self.wall, self.cpu = time.monotonic(), cpu_seconds()

    def lap(self, phase):
        wall, cpu = time.monotonic(), cpu_seconds()
        self.record[phase] = {"wall": wall - self.wall, "cpu": cpu - self.cpu}
        self.wall, self.cpu = wall, cpu


def one_process(device, kernel_check, probe_path):
    """The phases of one process, as runner.py runs them; a dict phase -> {wall, cpu}."""
    laps = Laps()
    import runner  # noqa: E402 - its own import is cheap; torch comes next
    import torch
    laps.lap("import_torch")
    runner.cpp_extension_stand_in.install(torch)  # what the runner does; the real module waits
    laps.lap("import_cpp_extension")
    if not device.startswith("cuda"):
        return laps.record
    torch.empty(1, device=device)
    laps.lap("cuda_context")

    def small_op():
        torch.ones(1024, device=device).mul_(2).sum()
        torch.cuda.synchronize(device)

    if kernel_check == "cupti":
        probe = runner.LaunchProbe(probe_path)  # attaches, as the process started ahead does
        laps.lap("kernel_check_setup")
        names, _ = probe.launches(small_op)
        laps.lap("kernel_check_first")
        if not names:
            raise RuntimeError("the launch probe saw no kernel of a torch op")
    else:
        runner.warm_profiler(torch, device)  # what the process started ahead does
        laps.lap("kernel_check_setup")
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            small_op()
        prof.events()
        laps.lap("kernel_check_first")
    return laps.record


def start_all(args, kernel_check):
    """Starts args.processes copies of this script at once; their records."""
    command = [sys.executable, os.path.abspath(__file__), "--one", "--device", args.device,
               "--kernel-check", kernel_check, "--launch-probe", args.launch_probe]
    children = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(args.processes)]
    records = []
    for child in children:
        out, err = child.communicate(timeout=600)
        if child.returncode != 0:
            raise RuntimeError("a process failed (exit %d): %s" % (child.returncode, err[-800:]))
        records.append(json.loads(out.strip().splitlines()[-1]))
    return records


def table(kernel_check, records):
    phases = list(records[0].keys())
    lines = []
    for phase in phases:
        walls = [r[phase]["wall"] for r in records]
        cpus = [r[phase]["cpu"] for r in records]
        lines.append("%-9s %-22s %8.3f %8.3f %8.3f %8.3f" % (
            kernel_check, phase, statistics.median(walls), max(walls), statistics.median(cpus),
            max(cpus)))
    return lines


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--kernel-check", default="profiler",
                   help="profiler, cupti, or both as profiler,cupti")
    p.add_argument("--launch-probe", default="",
                   help="dice_launch_probe.so (build-gpu/reward/), for --kernel-check cupti")
    p.add_argument("--one", action="store_true", help="(internal) measure this process only")
    args = p.parse_args(argv)
    checks = [c for c in args.kernel_check.split(",") if c]
    if args.processes < 1 or not checks or any(c not in ("profiler", "cupti") for c in checks):
        p.error("--processes must be >= 1 and --kernel-check profiler, cupti or profiler,cupti")
    if "cupti" in checks and args.device.startswith("cuda") and not args.launch_probe:
        p.error("--kernel-check cupti needs --launch-probe PATH")
    args.checks = checks
    return args


def main(argv):
    args = parse_args(argv)
    if importlib.util.find_spec("torch") is None:  # found, not imported: that is measured
        print("evaluator_start: %s has no torch; nothing to measure" % sys.executable)
        return 77
    if args.one:
        print(json.dumps(one_process(args.device, args.checks[0], args.launch_probe)))
        return 0
    print("evaluator_start: %d process(es) at once, device %s, %d CPU core(s)" % (
        args.processes, args.device, os.cpu_count()))
    if not args.device.startswith("cuda"):
        print("evaluator_start: no CUDA device: the CUDA context and the kernel check are not "
              "measured")
        args.checks = args.checks[:1]
    print("%-9s %-22s %8s %8s %8s %8s" % ("check", "phase", "wall_p50", "wall_max", "cpu_p50",
                                          "cpu_max"))
    cuda = args.device.startswith("cuda")
    for check in args.checks:
        for line in table(check if cuda else "none", start_all(args, check)):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
