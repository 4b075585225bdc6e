"""Extract what load_inline would build from a candidate file, without running the file.

Usage: python3 extract_sources.py CANDIDATE.py
Prints one JSON object:
  {"ok": true, "extensions": [{"name", "cpp_sources", "cuda_sources", "functions",
                               "extra_cuda_cflags", "extra_cflags", "extra_ldflags",
                               "ignored_flags", "line"}]}
  {"ok": false, "error": "line N: why"}

Only static values are accepted: string literals, names bound at module level to them, `+`
concatenation and f-strings whose fields are such names (candidate_ast.string_value). Anything
computed at run time (calls, file reads, formatting with expressions) is refused: the worker
compiles exactly what it can see.

Extra compiler and linker flags are read by an exact allow-list (flag_verdict): each flag is
passed on (optimisation levels, fast math, line info, relaxed constexpr and extended lambdas,
the language standard, register caps, `-D`/`-U` macros with a strict character set, a few
ptxas and host-compiler options, a few CUDA libraries), dropped and listed in "ignored_flags"
(architectures, which the worker picks for its own GPU; verbosity, debug and warning flags; -fPIC
and torch's own libraries, which the build adds), or refused: the file gets a compile error that
names the flag. nvcc runs its host steps through /bin/sh with the flags in the command text, so
a flag holding `$(...)`, a backtick, `;`, a quote or a space would be run by a shell: every flag
passed on is made of SHELL_INERT characters only, and compile_build.cc checks that again before
any compiler starts.
"""

import ast
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import candidate_ast as ca  # noqa: E402

# Characters no shell gives a meaning to in a word: what every flag passed on is made of.
SHELL_INERT = re.compile(r"[A-Za-z0-9_.+=:,/-]*\Z")

# Flags passed on as they are (one string each).
PASSED = re.compile("(?:" + "|".join([
    r"-O[0-3]",
    r"--?use_fast_math", r"-ffast-math",
    r"-lineinfo", r"--generate-line-info",
    r"--?expt-relaxed-constexpr", r"--?expt-extended-lambda", r"--extended-lambda",
    r"--?std=(c|gnu)\+\+(17|20)",
    r"--?maxrregcount=[0-9]{1,3}",
    r"--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)",
    r"-funroll-loops", r"-march=native", r"-fopenmp-simd", r"-w",
    # Macros: a C identifier, and a value of letters, digits and . + - _ (numbers, names).
    r"-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?",
    r"-U[A-Za-z_][A-Za-z0-9_]*",
    # Options handed to ptxas and to the host compiler, one at a time.
    r"(-Xptxas=|--ptxas-options=)(-O[0-3]|-dlcm=c[ag]|-dscm=(wt|cg)|--allow-expensive-optimizations=true)",
    r"(-Xcompiler=|--compiler-options=)(-O[0-3]|-ffast-math|-funroll-loops|-march=native|-fopenmp-simd)",
]) + r")\Z")

# Known GPU architecture names (the worker compiles for its own GPU: these are dropped).
ARCH = r"(sm|compute|lto)_[0-9]{2,3}[af]?"
# Flags dropped, listed in "ignored_flags": harmless, and not the candidate's to choose.
DROPPED = re.compile("(?:" + "|".join([
    r"(-arch|--gpu-architecture|-code|--gpu-code)=(%s|native|all|all-major)" % ARCH,
    r"(-gencode|--generate-code)=arch=%s,code=(%s|\[%s(,%s)*\])" % (ARCH, ARCH, ARCH, ARCH),
    r"-v", r"--verbose", r"-g", r"-G", r"-Ofast", r"-Os", r"-fPIC", r"-fopenmp",
    r"--resource-usage", r"-res-usage",
    # Older standards than the build's own C++17, which torch's headers need.
    r"--?std=(c|gnu)\+\+(03|11|14)",
    r"(-Xptxas=|--ptxas-options=)(-v|--verbose|--warn-on-spills)",
    r"(-Xcompiler=|--compiler-options=)(-fPIC|-fopenmp|-Wall|-Wextra|-w)",
    r"-W[a-z0-9-]*", r"-Wno-[a-z0-9-]+",
]) + r")\Z")
# Options written as two strings ("-arch", "sm_80"): the option, and what its second string may
# be to be dropped or passed on as one flag ("-Xptxas", "-O3" -> "-Xptxas=-O3").
TWO_PART = {"-arch": "-arch=", "--gpu-architecture": "-arch=", "-gencode": "-gencode=",
            "--generate-code": "-gencode=", "-code": "-code=", "-Xptxas": "-Xptxas=",
            "--ptxas-options": "-Xptxas=", "-Xcompiler": "-Xcompiler=",
            "--compiler-options": "-Xcompiler=", "-maxrregcount": "-maxrregcount=",
            "--maxrregcount": "-maxrregcount="}

ALLOWED_LIBS = {"-lcublas", "-lcublasLt", "-lcudnn", "-lcurand", "-lcufft", "-lcusparse",
                "-lcusolver", "-lcuda"}
# Libraries and library folders the build links anyway.
DROPPED_LD = re.compile(r"(-l(c10|c10_cuda|torch|torch_cpu|torch_cuda|torch_python|cudart)"
                        r"|-L/[A-Za-z0-9_./+-]*)\Z")


class Refused(Exception):
    def __init__(self, line, why):
        super().__init__("line %d: %s" % (line, why))


def keyword_args(call):
    out = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise Refused(call.lineno, "load_inline(**kwargs) cannot be read statically")
        out[kw.arg] = kw.value
    # load_inline(name, cpp_sources, cuda_sources, functions, ...) positionally
    for name, node in zip(("name", "cpp_sources", "cuda_sources", "functions"), call.args):
        out[name] = node
    return out


def flag_verdict(flag):
    """"pass", "drop" or "refuse" for one compiler flag."""
    if not SHELL_INERT.match(flag):
        return "refuse"
    if PASSED.match(flag):
        return "pass"
    if DROPPED.match(flag):
        return "drop"
    return "refuse"


def read_flags(key, values, line, ignored, linker=False):
    """The flags of `key` to pass on; the dropped ones go to `ignored`. Raises Refused naming
    the first flag outside the allow-list."""
    kept = []
    i = 0
    while i < len(values):
        flag = values[i].strip()
        i += 1
        if not flag:
            continue  # load_inline users write extra_ldflags=[""]
        if not linker and flag in TWO_PART and i < len(values):
            flag = TWO_PART[flag] + values[i].strip()
            i += 1
        if linker:
            verdict = "pass" if flag in ALLOWED_LIBS else \
                "drop" if DROPPED_LD.match(flag) else "refuse"
        else:
            verdict = flag_verdict(flag)
        if verdict == "refuse":
            raise Refused(line, "%s: flag %r is not allowed (compiler flags are read by an "
                          "allow-list: optimisation, fast math, -D/-U macros of letters, digits "
                          "and _ . + -, the language standard, register caps; linker flags: "
                          "CUDA's libraries)" % (key, flag))
        (kept if verdict == "pass" else ignored).append(flag)
    return kept


def extension_of(call, env):
    args = keyword_args(call)
    line = call.lineno

    def strings(key, required):
        if key not in args:
            if required:
                raise Refused(line, "load_inline without %s" % key)
            return []
        node = args[key]
        if isinstance(node, ast.Constant) and node.value is None:
            return []
        values = ca.string_list_value(node, env)
        if values is None:
            what = "`%s`" % node.id if isinstance(node, ast.Name) else "the value"
            raise Refused(getattr(node, "lineno", line),
                          "%s: %s is not a static string (built at run time)" % (key, what))
        return values

    names = strings("name", True)
    if len(names) != 1 or not names[0].isidentifier():
        raise Refused(line, "load_inline name must be one Python identifier")
    cpp = strings("cpp_sources", False)
    cuda = strings("cuda_sources", False)
    if not cuda:
        raise Refused(line, "load_inline without cuda_sources: no CUDA kernel to compile")
    functions = strings("functions", False)
    if isinstance(args.get("functions"), ast.Dict):
        raise Refused(line, "functions given as a dict (docstrings) is not supported")
    for f in functions:
        if not f.isidentifier():
            raise Refused(line, "function name %r is not an identifier" % f)
    ignored = []
    cuda_flags = read_flags("extra_cuda_cflags", strings("extra_cuda_cflags", False), line,
                            ignored)
    c_flags = read_flags("extra_cflags", strings("extra_cflags", False), line, ignored)
    ld_flags = read_flags("extra_ldflags", strings("extra_ldflags", False), line, ignored,
                          linker=True)
    return {"name": names[0], "cpp_sources": "\n".join(cpp), "cuda_sources": "\n".join(cuda),
            "functions": functions, "extra_cuda_cflags": cuda_flags, "extra_cflags": c_flags,
            "extra_ldflags": ld_flags, "ignored_flags": ignored, "line": line}


def extract(source):
    try:
        tree = ca.parse(source)
    except (SyntaxError, ValueError) as e:
        return {"ok": False, "error": "line %d: syntax error: %s" %
                (getattr(e, "lineno", 0) or 0, getattr(e, "msg", str(e)))}
    aliases = ca.Aliases(tree)
    env = ca.module_string_env(tree)
    calls = ca.load_inline_calls(tree, aliases)
    if not calls:
        return {"ok": False, "error": "line 1: no load_inline(...) call"}
    try:
        extensions = [extension_of(call, env) for _, call in calls]
    except Refused as e:
        return {"ok": False, "error": str(e)}
    names = [e["name"] for e in extensions]
    if len(set(names)) != len(names):
        return {"ok": False, "error": "line 1: two load_inline calls with the same name"}
    return {"ok": True, "extensions": extensions}


def main(argv):
    if len(argv) != 2:
        print("usage: extract_sources.py CANDIDATE.py", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        ca.emit_json(extract(f.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
