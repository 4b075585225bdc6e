"""GPU smoke run of the reward service's Python side without the C++ worker: for each dev task,
extract_sources.py -> the same two translation units binding.cc generates -> nvcc and c++ with
compile.cc's flags (in parallel) -> judge.py (with its runner) on the GPU. Prints one JSON line per task.
For a machine that has torch + nvcc but not dice's C++ dependencies; the real path is
reward_dev_data_gpu_test (ctest -L gpu).

Usage: python3 gpu_eval_smoke.py DEV.json OUT_DIR [--jobs 16] [--limit N] [--trials 5]
"""

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.join(HERE, "..", "..", "reward", "python")
NVCC_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
              "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
              "--expt-relaxed-constexpr", "-std=c++17", "--compiler-options", "-fPIC"]


def run(cmd, cwd, timeout=600):
    start = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - start
    print("  [%6.1f s] rc=%d %s" % (took, p.returncode, " ".join(cmd[:3])), file=sys.stderr,
          flush=True)
    return p, took


def build(item, probe, arch, work):
    d = os.path.join(work, str(item["id"]))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "candidate.py"), "w") as f:
        f.write(item["cuda_code"])
    p, _ = run([sys.executable, os.path.join(PY, "extract_sources.py"), "candidate.py"], d)
    ext = json.loads(p.stdout)
    if not ext["ok"]:
        return {"stage": "extract", "error": ext["error"]}
    e = ext["extensions"][0]
    with open(os.path.join(d, "kernels.cu"), "w") as f:
        f.write("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
                "#line 1 \"cuda_sources\"\n" + e["cuda_sources"] + "\n")
    binding = "#include <torch/extension.h>\n#line 1 \"cpp_sources\"\n" + e["cpp_sources"] + "\n"
    if e["functions"]:
        binding += "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" + "".join(
            '  m.def("%s", &%s, "%s");\n' % (fn, fn, fn) for fn in e["functions"]) + "}\n"
    with open(os.path.join(d, "binding.cpp"), "w") as f:
        f.write(binding)
    inc = ["-I" + x for x in probe["include_paths"] + [probe["python_include"]]]
    name_def = "-DTORCH_EXTENSION_NAME=" + e["name"]
    abi = "-D_GLIBCXX_USE_CXX11_ABI=%d" % probe["cxx11_abi"]
    pyb = ['-DPYBIND11_%s="%s"' % (k, v) for k, v in
           zip(("COMPILER_TYPE", "STDLIB", "BUILD_ABI"), probe["pybind11_abi"]) if v]
    nvcc = ["nvcc", "-c", "kernels.cu", "-o", "kernels.o", name_def,
            "-DTORCH_API_INCLUDE_EXTENSION_H", abi, "-O3"] + NVCC_FLAGS + [
        "-gencode=arch=compute_%s,code=sm_%s" % (arch, arch)] + inc + e["extra_cuda_cflags"]
    cxx = ["c++", "-c", "binding.cpp", "-o", "binding.o", "-fPIC", "-std=c++17", "-O3", name_def,
           "-DTORCH_API_INCLUDE_EXTENSION_H", abi] + pyb + inc + e["extra_cflags"]
    with cf.ThreadPoolExecutor(2) as pool:
        fn, fc = pool.submit(run, nvcc, d), pool.submit(run, cxx, d)
        (pn, tn), (pc, tc) = fn.result(), fc.result()
    if pn.returncode or pc.returncode:
        return {"stage": "compile", "error": (pn.stderr + pc.stderr)[-1500:],
                "nvcc_s": tn, "cxx_s": tc}
    libs = []
    for lib in ("c10", "torch", "torch_cpu", "torch_python", "c10_cuda", "torch_cuda"):
        if any(os.path.exists(os.path.join(l, "lib%s.so" % lib)) for l in probe["library_paths"]):
            libs.append("-l" + lib)
    so = e["name"] + probe["ext_suffix"]
    link = ["c++", "-shared", "kernels.o", "binding.o", "-o", so] + [
        "-L" + l for l in probe["library_paths"]] + libs + ["-L/usr/local/cuda/lib64",
                                                             "-lcudart"] + e["extra_ldflags"]
    pl, _ = run(link, d)
    if pl.returncode:
        return {"stage": "link", "error": pl.stderr[-1500:]}
    return {"stage": "built", "module": e["name"] + "=" + os.path.join(d, so), "nvcc_s": tn,
            "cxx_s": tc, "dir": d}


def evaluate(item, built, trials):
    d = built["dir"]
    with open(os.path.join(d, "reference.py"), "w") as f:
        f.write(item["pytorch_code"])
    p, _ = run([sys.executable, os.path.join(PY, "static_check.py"), "candidate.py"], d)
    kernels = json.loads(p.stdout)["kernels"]
    with open(os.path.join(d, "nonce"), "w") as f:
        f.write("x\n")
    p, t = run([sys.executable, os.path.join(PY, "judge.py"), "--spawn-runner", "--reference",
                "reference.py", "--runner-candidate", "candidate.py", "--runner-module",
                built["module"], "--trials",
                str(trials), "--kernels", ",".join(kernels), "--nonce-file", "nonce",
                "--timing", "--timing-trials",
                os.environ.get("DICE_SMOKE_TIMING_TRIALS", "20")], d, timeout=300)
    lines = [l for l in p.stdout.splitlines() if l.startswith("DICE_EVAL_RESULT x ")]
    if not lines:
        return {"stage": "evaluate", "error": (p.stdout + p.stderr)[-1500:], "wall_s": t}
    r = json.loads(lines[-1].split(" ", 2)[2])
    r["wall_s"] = t
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dev")
    ap.add_argument("out")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--trials", type=int, default=5)
    a = ap.parse_args()
    items = json.load(open(a.dev))
    if a.limit:
        items = items[:a.limit]
    probe = json.loads(subprocess.run([sys.executable, os.path.join(PY, "probe_torch.py")],
                                      capture_output=True, text=True).stdout)
    cap = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.split("\n")[0].strip()
    arch = cap.replace(".", "")
    work = tempfile.mkdtemp(prefix="dice-smoke-")
    os.makedirs(a.out, exist_ok=True)
    out = open(os.path.join(a.out, "results.jsonl"), "w")
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(a.jobs // 2) as pool, cf.ThreadPoolExecutor(2) as gpu:
        builds = {pool.submit(build, it, probe, arch, work): it for it in items}
        evals = []
        for fut in cf.as_completed(builds):
            it = builds[fut]
            try:
                b = fut.result()
            except Exception as e:  # noqa: BLE001
                b = {"stage": "build-crash", "error": repr(e)}
            if b["stage"] != "built":
                rec = {"id": it["id"], **b}
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(json.dumps(rec)[:400], flush=True)
                continue
            evals.append((it, b, gpu.submit(evaluate, it, b, a.trials)))
        for it, b, fut in evals:
            try:
                r = fut.result()
            except Exception as e:  # noqa: BLE001
                r = {"stage": "eval-crash", "error": repr(e)}
            rec = {"id": it["id"], "nvcc_s": b["nvcc_s"], "cxx_s": b["cxx_s"], **r}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(json.dumps({k: rec.get(k) for k in ("id", "failure", "detail", "nvcc_s",
                                                      "cxx_s", "speedup", "max_abs_error",
                                                      "findings", "stage", "error")})[:600],
                  flush=True)
    print("total wall %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
