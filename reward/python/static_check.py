"""Static anti-cheat checks on a candidate file (REFERENCE.md section 5), by parsing.

Usage: python3 static_check.py CANDIDATE.py [--nonfatal check,check]
Prints one JSON object: {"syntax_error": null | "line N: msg",
                         "findings": [{"check", "line", "detail", "fatal"}],
                         "kernels": [...], "launched": [...], "extension": name | null}

Checks (stable names; the C++ side and the reward log use them):
  syntax-error          the file does not parse (reported through "syntax_error" too)
  no-model-new          no `class ModelNew`
  inherits-model        ModelNew derives from the reference's Model (reuses its forward)
  no-global-kernel      no `__global__` function in any CUDA string
  kernel-not-launched   no `__global__` kernel is launched with `<<<...>>>`
  unlaunched-kernel     (not fatal) some `__global__` kernel is never launched
  no-load-inline        no load_inline(...) call bound to a name
  extension-not-called  ModelNew.forward never calls a function of the load_inline module
  torch-op-in-forward   forward (or what it calls) may compute outside the extension
                        (forward_calls.py, an allow-list): every call must be the extension's
                        function, a function, lambda or class of this file (walked in turn),
                        a torch function in ALLOWED_TORCH_FUNCTIONS, a method in
                        ALLOWED_METHODS or a builtin in SAFE_BUILTINS; anything else is
                        reported: torch.*/F.* ops, `@`, an nn module called (self.conv(x), a
                        module-level one, one under a local name), getattr(torch, "mm"), a
                        callee computed by an expression (ops["mm"](x)), a torch function
                        handed on as a value (map(torch.relu, xs)), abs/sum/map/filter, Python
                        arithmetic on a tensor (below)
  try-except-fallback   a try/except or try/except* anywhere (the classic PyTorch fallback path)
  stream-use            torch.cuda.Stream/stream/set_stream or cudaStreamCreate*/
                        getStreamFromPool/setCurrentCUDAStream (timing on the default stream
                        would miss the work)
  thread-spawn          threading/multiprocessing/concurrent/_thread, std::thread, pthread_create,
                        std::async, fork()
  monkey-patch          assignment to an attribute or item of a module under any name the file
                        gives it (torch.cuda.Event = ..., t = torch; t.matmul = ...: names are
                        followed by candidate_ast.Aliases), setattr/delattr on one, a module
                        handed to a call, its __dict__, or setattr used as a value
  state-in-forward      forward stores into self.* or a global (caches outputs across calls)
  forbidden-import      ctypes, subprocess, socket, gc, inspect, importlib, os.system-like escapes,
                        native code loaded at run time (torch.ops.load_library, jiterator)
  dynamic-code          eval/exec/compile/__import__/getattr with a non-literal name
  tool-tampering        the CUDA source names CUPTI (cupti*), dice's launch probe or the dynamic
                        loader (dlopen/dlsym): the kernel check's own tools, which a candidate
                        holding or calling could blind
  vendor-library        (not fatal) cuBLAS/cuDNN handles in the CUDA source

Python arithmetic and comparisons in forward (`x + y`, `-x`, `x > 0`, `y += b`) are
torch-op-in-forward where an operand may be a tensor (forward_calls.TensorValues: forward's
parameters, what the extension returns, torch's buffers, module parameters, and views, casts
and loops of those); sizes read from a tensor (x.size(0), x.shape[1], x.numel()) are numbers.

Known limits: a tensor reached through something TensorValues does not follow (an attribute
set outside __init__, an item of a container built elsewhere, a value returned by a helper) is
taken for a number; the dynamic checks in judge.py (the module's imports, a kernel of the
candidate's module must run) stand behind that.
"""

import ast
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import candidate_ast as ca  # noqa: E402
from forward_calls import DYNAMIC_BUILTINS, ForwardWalker, Program  # noqa: E402

THREAD_MODULES = {"threading", "multiprocessing", "concurrent", "_thread", "asyncio"}
FORBIDDEN_MODULES = {"ctypes", "subprocess", "socket", "gc", "inspect", "importlib", "builtins",
                     "pty", "signal", "mmap", "cffi", "shutil"}
FORBIDDEN_CALLS = {"os.system", "os.popen", "os.fork", "os.kill", "os.execv", "os.execvp",
                   "os.spawnl", "os.posix_spawn", "sys._getframe", "sys.settrace",
                   "sys.setprofile",
                   # Native code the judge never read (module_imports.py reads the built
                   # modules only): a library loaded, or CUDA compiled, at run time.
                   "torch.ops.load_library", "torch.classes.load_library",
                   "torch.utils.cpp_extension.load", "torch.cuda.jiterator._create_jit_fn",
                   "torch.cuda.jiterator._create_multi_output_jit_fn"}

STREAM_CALLS = {"torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream",
                "torch.cuda.ExternalStream", "torch.cuda.StreamContext", "torch.Stream",
                "torch.cuda.graph", "torch.cuda.CUDAGraph"}
C_STREAM_TOKENS = {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
                   "at::cuda::getStreamFromPool", "c10::cuda::getStreamFromPool",
                   "getStreamFromPool", "at::cuda::setCurrentCUDAStream",
                   "c10::cuda::setCurrentCUDAStream", "setCurrentCUDAStream",
                   "cudaStreamBeginCapture", "cudaGraphLaunch"}
# Any mention of these spawns threads; the call-like ones count only when called.
C_THREAD_TOKENS = {"std::thread", "std::jthread", "pthread_create", "std::async"}
C_THREAD_CALLS = {"fork", "vfork", "popen", "posix_spawn"}
C_VENDOR_TOKENS = ("cublas", "cudnn", "cutlass")
# The kernel check's tools (runner.py's launch probe and the profiler both use CUPTI, which
# takes one subscriber per process) and the loader that would reach them.
C_TOOL_PREFIXES = ("cupti", "dice_launch_probe")
C_LOADER_TOKENS = {"dlopen", "dlmopen", "dlsym", "dlvsym"}
# C++ calls into ATen compute from the extension itself: the host code doing the op in PyTorch.
C_ATEN_COMPUTE_PREFIXES = ("at::", "torch::")
C_ATEN_ALLOWED = {"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full",
                  "empty_strided", "TensorOptions", "Tensor", "Device", "kCUDA", "kFloat",
                  "kFloat32", "kHalf", "kBFloat16", "kInt", "kLong", "kBool", "kDouble",
                  "ScalarType", "IntArrayRef", "Scalar", "kInt32", "kInt64", "kByte", "kUInt8",
                  "kChar", "kShort", "kComplexFloat", "dtype", "device", "Layout", "kStrided",
                  "cuda", "MemoryFormat", "optional", "nullopt", "OptionalDeviceGuard",
                  "DeviceGuard", "Half", "BFloat16", "PackedTensorAccessor32",
                  "PackedTensorAccessor64", "RestrictPtrTraits", "DefaultPtrTraits",
                  "IntArrayRef", "Generator", "ArrayRef", "TensorList", "TensorAccessor",
                  "detail", "native", "acc_type", "opmath_type", "empty_cuda", "string",
                  "arange", "tensor"}


class Report:
    def __init__(self, nonfatal):
        self.findings = []
        self.nonfatal = nonfatal

    def add(self, check, line, detail, fatal=True):
        if check in self.nonfatal:
            fatal = False
        key = (check, line, detail)
        if any((f["check"], f["line"], f["detail"]) == key for f in self.findings):
            return
        self.findings.append({"check": check, "line": line,
                              "detail": "line %d: %s" % (line, detail), "fatal": fatal})


# Every kind of try statement: `try/except` and, from Python 3.11, `try/except*` (ast.TryStar).
TRY_NODES = tuple(getattr(ast, n) for n in ("Try", "TryStar") if hasattr(ast, n))

# Builtins that may be handed a module without being able to change it (getattr only with a
# literal name: dynamic-code otherwise).
MODULE_SAFE_CALLS = {"isinstance", "issubclass", "hasattr", "getattr", "print", "id", "type",
                     "repr", "str"}
# Attributes of a module through which it is rewritten without an assignment to it.
MODULE_DUNDERS = {"__dict__", "__setattr__", "__delattr__", "__getattribute__", "__class__"}


def check_imports_and_patching(program, report):
    aliases = program.aliases
    called = {id(n.func) for n in ast.walk(program.tree) if isinstance(n, ast.Call)}
    for node in ast.walk(program.tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""]
            for m in mods:
                root = m.split(".")[0]
                if root in THREAD_MODULES:
                    report.add("thread-spawn", node.lineno, "imports %s" % m)
                elif root in FORBIDDEN_MODULES:
                    report.add("forbidden-import", node.lineno, "imports %s" % m)
        elif isinstance(node, TRY_NODES):
            report.add("try-except-fallback", node.lineno,
                       "try/except (a fallback path around the kernel)")
        elif isinstance(node, ast.Call):
            name = aliases.resolve(node.func)
            if name in STREAM_CALLS:
                report.add("stream-use", node.lineno, "%s creates or switches CUDA streams" % name)
            elif name in FORBIDDEN_CALLS:
                report.add("forbidden-import", node.lineno, "calls %s" % name)
            elif isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_BUILTINS:
                report.add("dynamic-code", node.lineno, "%s(...)" % node.func.id)
            elif isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                    and node.args:
                target = aliases.value_path(node.args[0])
                if target is not None:
                    report.add("monkey-patch", node.lineno,
                               "%s on module %s" % (node.func.id, target))
            check_module_arguments(node, aliases, report)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) \
                else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    # `X.a = v` and `X[k] = v` change X: what matters is whether X is a module.
                    if isinstance(sub, (ast.Attribute, ast.Subscript)):
                        root = aliases.value_path(sub.value)
                        if root is not None:
                            report.add("monkey-patch", node.lineno,
                                       "assigns %s" % (aliases.resolve(sub) or "into " + root))
                            break
        elif isinstance(node, ast.Attribute) and node.attr in MODULE_DUNDERS:
            root = aliases.value_path(node.value)
            if root is not None:
                report.add("monkey-patch", node.lineno, "reaches %s.%s" % (root, node.attr))
        elif isinstance(node, ast.Name) and node.id in ("setattr", "delattr") \
                and isinstance(node.ctx, ast.Load) and id(node) not in called:
            # Called directly it is checked above; handed on (map, partial, a name of its own)
            # its first argument is out of sight.
            report.add("monkey-patch", node.lineno, "%s used as a value" % node.id)


def check_module_arguments(call, aliases, report):
    """A module handed to a call: the callee (a function of this file, a lambda, a library's)
    holds it under a name of its own, where no reading of this file follows every store."""
    if isinstance(call.func, ast.Name) and (call.func.id in MODULE_SAFE_CALLS or
                                            call.func.id in ("setattr", "delattr")):
        return  # setattr and delattr on a module are reported as such
    for arg in call.args + [kw.value for kw in call.keywords]:
        if isinstance(arg, ast.Starred):
            arg = arg.value
        if not isinstance(arg, (ast.Name, ast.Attribute)):
            continue
        path = aliases.value_path(arg)
        if path is not None and aliases.is_module(path):
            report.add("monkey-patch", call.lineno,
                       "module %s passed to %s" % (path, aliases.resolve(call.func) or "a call"))


def cuda_strings(tree):
    """(python line, text) of every string literal in the file: CUDA/C++ sources may be
    assembled from several, and a check on all of them cannot be dodged by indirection."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
            out.append((node.lineno, node.value))
    return out


def check_cuda(tree, report):
    kernels, launched = [], []
    vendor = False
    for line, text in cuda_strings(tree):
        clean = ca.strip_c_comments_and_strings(text)
        tokens = ca.c_tokens(clean)
        kernels += ca.global_kernels(tokens)
        launched += ca.launched_kernels(tokens)
        for k, (tok, off) in enumerate(tokens):
            at = line + ca.line_of(clean, off)
            if tok in C_STREAM_TOKENS:
                report.add("stream-use", at, "%s in the CUDA source" % tok)
            elif tok in C_THREAD_TOKENS or tok in C_THREAD_CALLS and k + 1 < len(tokens) \
                    and tokens[k + 1][0] == "(" and (k == 0 or tokens[k - 1][0] not in (".", ">")):
                report.add("thread-spawn", at, "%s in the CUDA source" % tok)
            elif tok in C_LOADER_TOKENS or tok.split("::")[-1].lower().startswith(C_TOOL_PREFIXES):
                report.add("tool-tampering", at, "%s in the CUDA source" % tok)
            elif any(tok.lower().startswith(v) for v in C_VENDOR_TOKENS):
                vendor = True
            elif tok.startswith(C_ATEN_COMPUTE_PREFIXES) and k + 1 < len(tokens) \
                    and tokens[k + 1][0] == "(":
                last = tok.split("::")[-1]
                if last not in C_ATEN_ALLOWED and tok.count("::") == 1:
                    report.add("torch-op-in-forward", at,
                               "%s(...) in the extension's host code" % tok)
    return kernels, launched, vendor


def check(source, nonfatal=()):
    report = Report(set(nonfatal))
    result = {"syntax_error": None, "findings": report.findings, "kernels": [], "launched": [],
              "extension": None}
    try:
        tree = ca.parse(source)
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", 0) or 0
        result["syntax_error"] = "line %d: %s" % (line, getattr(e, "msg", str(e)))
        report.add("syntax-error", line, getattr(e, "msg", str(e)))
        return result
    program = Program(tree)
    check_imports_and_patching(program, report)

    kernels, launched, vendor = check_cuda(tree, report)
    result["kernels"], result["launched"] = sorted(set(kernels)), sorted(set(launched))
    if not kernels:
        report.add("no-global-kernel", 1, "no __global__ kernel in the CUDA source" +
                   (" (it calls a vendor library: cuBLAS/cuDNN)" if vendor else ""))
    elif not set(kernels) & set(launched):
        report.add("kernel-not-launched", 1,
                   "no __global__ kernel is launched with <<<...>>> (%s)" % ", ".join(kernels))
    else:
        for k in sorted(set(kernels) - set(launched)):
            report.add("unlaunched-kernel", 1, "kernel %s is never launched" % k, fatal=False)
    if vendor and kernels:
        report.add("vendor-library", 1, "the CUDA source uses cuBLAS/cuDNN/CUTLASS", fatal=False)

    if not program.extensions:
        report.add("no-load-inline", 1, "no `name = load_inline(...)` in the file")
    else:
        result["extension"] = sorted(program.extensions)[0]

    cls = program.classes.get("ModelNew")
    if cls is None:
        report.add("no-model-new", 1, "no class ModelNew")
        return result
    for base in cls.bases:
        name = program.aliases.resolve(base) or ""
        if name.split(".")[-1] == "Model" or name in program.classes and name != "ModelNew" \
                and is_model_like(program, name):
            report.add("inherits-model", cls.lineno, "ModelNew derives from %s" % name)
    walker = ForwardWalker(program, report)
    walker.walk_class(cls, "forward")
    if "forward" not in program.methods(cls):
        report.add("no-model-new", cls.lineno, "ModelNew has no forward method")
    elif program.extensions and not walker.extension_called:
        report.add("extension-not-called", program.methods(cls)["forward"].lineno,
                   "ModelNew.forward never calls a function of %s" %
                   ", ".join(sorted(program.extensions)))
    return result


def is_model_like(program, name):
    """A local class that itself derives from Model (ModelNew(Base), Base(Model))."""
    cls = program.classes.get(name)
    if cls is None:
        return False
    return any((program.aliases.resolve(b) or "").split(".")[-1] == "Model" for b in cls.bases)


def main(argv):
    if len(argv) < 2:
        print("usage: static_check.py CANDIDATE.py [--nonfatal a,b]", file=sys.stderr)
        return 2
    nonfatal = []
    if len(argv) >= 4 and argv[2] == "--nonfatal":
        nonfatal = [c for c in argv[3].split(",") if c]
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        source = f.read()
    ca.emit_json(check(source, nonfatal))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
