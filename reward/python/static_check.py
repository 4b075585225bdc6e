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
  torch-op-in-forward   forward (or what it calls) runs a PyTorch compute op: torch.*/F.* calls
                        outside ALLOWED_TORCH_FUNCTIONS, tensor methods outside ALLOWED_METHODS,
                        `@`, or calling an nn module (self.conv(x))
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
  forbidden-import      ctypes, subprocess, socket, gc, inspect, importlib, os.system-like escapes
  dynamic-code          eval/exec/compile/__import__/getattr with a non-literal name
  tool-tampering        the CUDA source names CUPTI (cupti*), dice's launch probe or the dynamic
                        loader (dlopen/dlsym): the kernel check's own tools, which a candidate
                        holding or calling could blind
  vendor-library        (not fatal) cuBLAS/cuDNN handles in the CUDA source

Known limits: element-wise Python arithmetic (`x + y`, `x * 2`) in forward is not flagged,
because tensors and plain numbers cannot be told apart statically; the dynamic checks in
judge.py (a kernel of the candidate's module must run) cover that side.
"""

import ast
import collections
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import candidate_ast as ca  # noqa: E402

# torch.* functions that only allocate, describe or move tensors: output buffers
# (torch.empty(...)), metadata, and context managers. Anything else under torch. computes.
ALLOWED_TORCH_FUNCTIONS = {
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
    "torch.ones", "torch.ones_like", "torch.full", "torch.full_like", "torch.tensor",
    "torch.as_tensor", "torch.arange", "torch.Size", "torch.device", "torch.dtype",
    "torch.is_tensor", "torch.is_floating_point", "torch.numel", "torch.no_grad",
    "torch.inference_mode", "torch.get_default_dtype", "torch.promote_types",
    "torch.result_type", "torch.finfo", "torch.iinfo", "torch.cuda.current_device",
    "torch.cuda.current_stream", "torch.cuda.is_available", "torch.cuda.device",
    "torch.cuda.get_device_properties", "torch.cuda.get_device_capability",
    "torch.jit.is_scripting", "torch._C._get_tracing_state",
}

# Method calls that do no arithmetic: tensor metadata and views, copies/casts that the kernel's
# inputs may need, and plain Python container/string methods.
ALLOWED_METHODS = {
    # tensor metadata
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "data_ptr",
    "element_size", "is_contiguous", "get_device", "item", "tolist", "type", "is_cuda",
    # views, layout and placement
    "view", "view_as", "reshape", "reshape_as", "contiguous", "flatten", "unflatten",
    "squeeze", "unsqueeze", "permute", "transpose", "t", "expand", "expand_as", "narrow",
    "select", "unbind", "split", "chunk", "as_strided", "detach", "clone", "to", "cuda", "cpu",
    "float", "half", "bfloat16", "double", "int", "long", "bool", "short", "byte", "char",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "zero_", "fill_",
    "requires_grad_", "copy_", "pin_memory",
    # autograd.Function plumbing
    "apply", "save_for_backward", "mark_dirty", "mark_non_differentiable",
    # python containers and strings
    "append", "extend", "insert", "pop", "items", "keys", "values", "get", "index", "count",
    "format", "join", "startswith", "endswith", "lower", "upper", "strip", "replace", "copy",
    "setdefault", "update", "add", "parameters", "named_parameters", "buffers",
}

SAFE_BUILTINS = {
    "len", "list", "tuple", "dict", "set", "int", "float", "bool", "str", "range", "enumerate",
    "zip", "isinstance", "min", "max", "abs", "round", "all", "any", "sorted", "reversed",
    "print", "super", "hasattr", "divmod", "map", "filter", "ValueError", "RuntimeError",
    "TypeError", "NotImplementedError", "AssertionError", "type", "id", "iter", "next", "slice",
}

THREAD_MODULES = {"threading", "multiprocessing", "concurrent", "_thread", "asyncio"}
FORBIDDEN_MODULES = {"ctypes", "subprocess", "socket", "gc", "inspect", "importlib", "builtins",
                     "pty", "signal", "mmap", "cffi", "shutil"}
FORBIDDEN_CALLS = {"os.system", "os.popen", "os.fork", "os.kill", "os.execv", "os.execvp",
                   "os.spawnl", "os.posix_spawn", "sys._getframe", "sys.settrace",
                   "sys.setprofile"}
DYNAMIC_BUILTINS = {"eval", "exec", "compile", "__import__", "globals", "vars", "locals"}

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


class Program:
    """What the checks need to know about the file as a whole."""

    def __init__(self, tree):
        self.tree = tree
        self.aliases = ca.Aliases(tree)
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.extensions = {name for name, _ in ca.load_inline_calls(tree, self.aliases) if name}

    def methods(self, cls):
        return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}

    def init_attribute_types(self, cls):
        """self.<attr> -> dotted constructor name, from assignments in __init__."""
        out = {}
        init = self.methods(cls).get("__init__")
        if init is None:
            return out
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                            and t.value.id == "self":
                        out[t.attr] = self.aliases.resolve(node.value.func)
        return out


def is_self_attr(expr):
    return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) \
        and expr.value.id == "self"


def root_name(expr):
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


class ForwardWalker:
    """Walks ModelNew.forward and everything it reaches in this file (its own methods,
    module-level functions, classes defined here: autograd Functions and helper modules),
    reporting compute done outside the extension."""

    def __init__(self, program, report):
        self.p = program
        self.r = report
        self.visited = set()
        self.pending = collections.deque()  # (function, class) found but not yet walked
        self.extension_called = False

    def walk_class(self, cls, entry):
        methods = self.p.methods(cls)
        if entry not in methods:
            return
        self.walk_function(methods[entry], cls)

    def walk_function(self, fn, cls):
        """Walks fn and every local function and method it calls. A worklist, not recursion: a
        chain of helpers longer than Python's recursion limit is still a file Python compiles."""
        key = (cls.name if cls else "", fn.name)
        if key in self.visited:
            return
        self.visited.add(key)
        self.pending.append((fn, cls))
        if len(self.pending) > 1:
            return  # a call found while walking: the loop below, further up, takes it
        while self.pending:
            self.walk_body(*self.pending[0])
            self.pending.popleft()

    def walk_body(self, fn, cls):
        where = "%s.%s" % (cls.name, fn.name) if cls else fn.name
        attr_types = self.p.init_attribute_types(cls) if cls else {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                self.check_call(node, cls, attr_types, where)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                self.r.add("torch-op-in-forward", node.lineno, "`@` matmul in %s" % where)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and cls is not None \
                    and fn.name != "__init__":
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for sub in ast.walk(t):
                        if is_self_attr(sub) and isinstance(sub.ctx, ast.Store) or \
                                isinstance(sub, ast.Subscript) and root_name(sub) == "self":
                            self.r.add("state-in-forward", node.lineno,
                                       "%s stores into self.%s" % (where, root_attr(sub)))
                            break
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.r.add("state-in-forward", node.lineno,
                           "%s declares global %s" % (where, ", ".join(node.names)))

    def check_call(self, node, cls, attr_types, where):
        func = node.func
        name = self.p.aliases.resolve(func)
        # Calls into the compiled extension: the point of the exercise.
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in self.p.extensions:
            self.extension_called = True
            return
        if isinstance(func, ast.Name):
            if func.id in self.p.functions:
                self.walk_function(self.p.functions[func.id], None)
                return
            if func.id in self.p.classes:
                return  # constructing a local helper class; its methods are walked when called
            if func.id in DYNAMIC_BUILTINS or func.id in ("getattr", "setattr"):
                if func.id in ("getattr", "setattr") and len(node.args) >= 2 \
                        and isinstance(node.args[1], ast.Constant):
                    return
                self.r.add("dynamic-code", node.lineno, "%s(...) in %s" % (func.id, where))
                return
            if func.id in SAFE_BUILTINS or name is None:
                return
        if name is not None and name.startswith("torch."):
            if name in ALLOWED_TORCH_FUNCTIONS:
                return
            self.r.add("torch-op-in-forward", node.lineno, "%s in %s" % (name, where))
            return
        if isinstance(func, ast.Name):
            if self.p.aliases.is_module_root(func.id):
                self.r.add("torch-op-in-forward", node.lineno, "%s in %s" % (name, where))
            return
        if isinstance(func, ast.Attribute):
            # self.method(...) inside a class of this file
            if cls is not None and isinstance(func.value, ast.Name) and func.value.id == "self":
                methods = self.p.methods(cls)
                if func.attr in methods:
                    self.walk_function(methods[func.attr], cls)
                    return
                ctor = attr_types.get(func.attr)
                local = ctor.split(".")[-1] if ctor else None
                if local in self.p.classes:
                    self.walk_class(self.p.classes[local], "forward")
                    return
                self.r.add("torch-op-in-forward", node.lineno,
                           "calls submodule self.%s%s in %s" %
                           (func.attr, " (%s)" % ctor if ctor else "", where))
                return
            # LocalClass.apply(...) / LocalClass.method(...)
            if isinstance(func.value, ast.Name) and func.value.id in self.p.classes:
                target = self.p.classes[func.value.id]
                self.walk_class(target, "forward" if func.attr == "apply" else func.attr)
                return
            if is_self_attr(func.value) and cls is not None:
                ctor = attr_types.get(func.value.attr)
                local = ctor.split(".")[-1] if ctor else None
                if local in self.p.classes and func.attr != "forward":
                    self.walk_class(self.p.classes[local], func.attr)
                    return
            if func.attr in ALLOWED_METHODS:
                return
            self.r.add("torch-op-in-forward", node.lineno,
                       "method .%s(...) in %s" % (func.attr, where))


def root_attr(expr):
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr.attr if isinstance(expr, ast.Attribute) else "?"


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
