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

Extra compiler flags are filtered to an allow-list (optimisation, macros, fast math, register
caps, language standard); linker flags to a few CUDA libraries. Others are dropped and listed in
"ignored_flags": flags like -ccbin, -o, -Xlinker or @file would let a candidate steer the build.
Architecture flags are dropped too: the worker compiles for its own GPU.
"""

import ast
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import candidate_ast as ca  # noqa: E402

ALLOWED_FLAG_PREFIXES = ("-O", "-D", "-U", "--use_fast_math", "-use_fast_math", "-lineinfo",
                         "--expt-relaxed-constexpr", "--expt-extended-lambda",
                         "-std=c++", "--std=c++", "-maxrregcount", "--maxrregcount",
                         "-ffast-math", "-funroll-loops", "-march=native", "-fopenmp-simd",
                         "--ftz", "--prec-div", "--prec-sqrt", "--fmad", "-w")
ALLOWED_LIBS = {"-lcublas", "-lcublasLt", "-lcudnn", "-lcurand", "-lcufft", "-lcusparse",
                "-lcusolver", "-lcuda"}


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


def filter_flags(values, allowed, ignored):
    kept = []
    for v in values:
        if allowed(v):
            kept.append(v)
        else:
            ignored.append(v)
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
    cuda_flags = filter_flags(strings("extra_cuda_cflags", False),
                              lambda f: f.startswith(ALLOWED_FLAG_PREFIXES), ignored)
    c_flags = filter_flags(strings("extra_cflags", False),
                           lambda f: f.startswith(ALLOWED_FLAG_PREFIXES), ignored)
    ld_flags = filter_flags(strings("extra_ldflags", False), lambda f: f in ALLOWED_LIBS, ignored)
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
