"""Shared parsing helpers for the reward service's Python scripts (static_check.py,
extract_sources.py). Standard library only: these run where torch may be absent.

A candidate file is KernelBench-shaped: CUDA/C++ source in Python strings, a
`load_inline(...)` call that builds an extension module, and `class ModelNew(nn.Module)` whose
forward calls the extension. Everything here works on the parsed tree (ast), never on regexes
over the Python text; CUDA strings are scanned token by token with comments and string literals
removed.
"""

import ast

LOAD_INLINE_NAMES = ("load_inline", "torch.utils.cpp_extension.load_inline")


class Aliases:
    """Maps local names to the dotted module paths they stand for, so that `F.relu`,
    `nn.functional.relu` and `from torch.nn.functional import relu` all resolve to
    `torch.nn.functional.relu`.

    Names come from imports and from every binding that passes such a path on (bindings()):
    `t = torch`, `f = torch.nn.functional`, `a, b = torch, F`, `m = sys.modules["torch"]`,
    `m = getattr(torch, "nn")`, `self.m = torch`, `for m in (torch,)`, `(m := torch)`, a
    parameter whose default or whose argument at a call in this file is one, a container holding
    one. A module reached through a local name is still the module: checks that read a path
    (monkey-patching, torch calls in forward) see through every such name. Scopes are not told
    apart (a name bound to a module anywhere stands for it everywhere): a check may say too much
    about a name reused for something else, never too little."""

    def __init__(self, tree):
        self.names = {}
        # Dotted paths that are modules for certain: those an `import` statement names, and their
        # parents (`import torch.nn.functional` binds torch, which holds torch.nn).
        self.modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    self.modules.update(".".join(parts[:i + 1]) for i in range(len(parts)))
                    if a.asname:
                        self.names[a.asname] = a.name
                    else:
                        self.names[parts[0]] = parts[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.names[a.asname or a.name] = node.module + "." + a.name
        self.follow(bindings(tree))

    def follow(self, pairs):
        """Adds every name a (target, value, suffix) binding gives a path. A worklist keyed on
        the names a value reads: each binding is looked at again only when a name it reads
        gains a path, so a chain `a = torch; b = a; ...` in any order costs its length, not its
        square. A name keeps the first path it gets (no binding replaces one)."""
        readers = {}
        for k, (_, value, _) in enumerate(pairs):
            for key in read_keys(value):
                readers.setdefault(key, []).append(k)
        pending = list(range(len(pairs)))
        while pending:
            target, value, suffix = pairs[pending.pop()]
            path = self.value_path(value)
            if path is None:
                continue
            for key in target_keys(target):
                if key not in self.names:
                    self.names[key] = item_of(path) if suffix else path
                    pending += readers.get(key, ())

    def value_path(self, node):
        """The path an expression's value stands for, when it is a module, or something reached
        from one without calling it (attributes, items, getattr with a literal name); else None.
        Iterative: `t[0][0]...` thousands deep is a file Python compiles."""
        stack = [(node, [])]
        while stack:
            node, outer = stack.pop()
            steps = []  # from the innermost out: ".attr" or (subscript slice)
            while True:
                if isinstance(node, ast.Attribute):
                    steps.append("." + node.attr)
                    node = node.value
                elif isinstance(node, ast.Subscript):
                    steps.append(node.slice)
                    node = node.value
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                        and node.func.id == "getattr" and len(node.args) >= 2 \
                        and isinstance(node.args[1], ast.Constant) \
                        and isinstance(node.args[1].value, str):
                    steps.append("." + node.args[1].value)
                    node = node.args[0]
                else:
                    break
            steps.reverse()
            steps += outer
            if isinstance(node, ast.Name):
                path = self.path_of_steps(node.id, steps)
                if path is not None:
                    return path
            elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                stack += [(e, ["[]"] + steps) for e in node.elts]
            elif isinstance(node, ast.Dict):
                stack += [(v, ["[]"] + steps) for v in node.values]
            elif isinstance(node, ast.IfExp):
                stack += [(node.body, steps), (node.orelse, steps)]
            elif isinstance(node, ast.BoolOp):
                stack += [(v, steps) for v in node.values]
            elif isinstance(node, (ast.NamedExpr, ast.Starred)):
                stack.append((node.value, steps))
        return None

    def path_of_steps(self, name, steps):
        """value_path of `name` followed by `steps` (".attr", "[]" or a subscript's slice)."""
        lead = 0
        while lead < len(steps) and isinstance(steps[lead], str) and steps[lead] != "[]":
            lead += 1
        parts = [name] + [st[1:] for st in steps[:lead]]
        path = None
        for i in range(len(parts), 0, -1):
            key = ".".join(parts[:i])
            if key in self.names:
                path = ".".join([self.names[key]] + parts[i:])
                break
        if path is None:
            return None
        for st in steps[lead:]:
            if st == "[]":  # a container of `path` around it
                path += "[]"
            elif isinstance(st, str):
                path += st
            elif path == "sys.modules" and isinstance(st, ast.Constant) \
                    and isinstance(st.value, str):
                path = st.value
            else:
                path = item_of(path)
        return path

    def resolve(self, expr):
        """Dotted name of a Name/Attribute chain with its longest aliased prefix expanded
        (`t.nn.relu` after `t = torch` -> torch.nn.relu; `self.m.x` after `self.m = torch` ->
        torch.x; `x.view` -> x.view), else None."""
        parts = chain_parts(expr)
        if parts is None:
            return None
        return self.expand(parts) or ".".join(parts)

    def expand(self, parts):
        """The path of a chain's parts with its longest aliased prefix expanded, or None when no
        prefix is an alias."""
        for i in range(len(parts), 0, -1):
            key = ".".join(parts[:i])
            if key in self.names:
                return ".".join([self.names[key]] + parts[i:])
        return None

    def is_module_root(self, name):
        return name in self.names

    def is_module(self, path):
        """Whether `path` is a module for certain (named by an import statement), or one of the
        few torch submodules a from-import usually brings in."""
        return path in self.modules or path in KNOWN_MODULES


# Submodules a candidate may import by `from torch import nn` and the like, which are modules
# whatever their name (a from-import alone does not say whether it named a module).
KNOWN_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.cuda", "torch.utils",
                 "torch.utils.cpp_extension", "torch.autograd", "torch.backends", "torch.ops",
                 "torch.library", "torch.linalg", "torch.fft", "torch.special", "torch.jit",
                 "torch.cuda.amp", "torch.amp", "os", "sys", "time", "math", "builtins",
                 "functools", "operator", "numpy", "triton", "triton.language"}


def item_of(path):
    """The path of an item of `path`: what a container of a module holds is the module
    (`[torch][0]` -> torch); an item of anything else is `path[]`."""
    return path[:-2] if path.endswith("[]") else path + "[]"


def chain_parts(expr):
    """["a", "b", "c"] for a chain of attributes `a.b.c` on a name, else None."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    parts.reverse()
    return parts


def chain_text(expr):
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts = chain_parts(expr)
    return None if parts is None else ".".join(parts)


def target_keys(target):
    """The names an assignment target binds: plain names, `self.m`-like chains, every element
    of an unpacking (each gets the whole value's path: which element holds what is not
    followed)."""
    keys, stack = [], [target]
    while stack:
        t = stack.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            stack += t.elts
        elif isinstance(t, ast.Starred):
            stack.append(t.value)
        elif isinstance(t, (ast.Name, ast.Attribute)):
            key = chain_text(t)
            if key is not None:
                keys.append(key)
        elif isinstance(t, ast.arg):
            keys.append(t.arg)
    return keys


def read_keys(value):
    """The names and `a.b` chains an expression reads (what a binding of it waits on)."""
    keys = set()
    for node in ast.walk(value):
        if isinstance(node, (ast.Name, ast.Attribute)):
            key = chain_text(node)
            if key is not None:
                keys.add(key)
    return keys


def bindings(tree):
    """(target, value, suffix) for every way the file binds a name to an expression's value:
    assignments (pairwise where both sides are tuples of one length), walrus, `with ... as`,
    loop and comprehension targets (an item of the iterable: suffix "[]"), defaults of
    parameters, arguments at calls of functions and lambdas defined in this file, and class-body
    names, which instances and the class reach as `self.x` and `Class.x`."""
    pairs = []
    defs = {}  # name -> [(function or lambda node, is a method)]
    methods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defs.setdefault(item.name, []).append((item, True))
                    methods.add(id(item))
                elif isinstance(item, ast.Assign):
                    for t in item.targets:
                        if isinstance(t, ast.Name):
                            for owner in ("self", node.name):
                                pairs.append((ast.Attribute(value=ast.Name(id=owner), attr=t.id),
                                              item.value, ""))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and isinstance(node.value,
                                                                        (ast.Tuple, ast.List)) \
                        and len(t.elts) == len(node.value.elts):
                    pairs += [(a, b, "") for a, b in zip(t.elts, node.value.elts)]
                else:
                    pairs.append((t, node.value, ""))
                if isinstance(t, ast.Name) and isinstance(node.value, ast.Lambda):
                    defs.setdefault(t.id, []).append((node.value, False))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs.append((node.target, node.value, ""))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            pairs.append((node.target, node.iter, "[]"))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            pairs.append((node.optional_vars, node.context_expr, ""))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and id(node) not in methods:
                defs.setdefault(node.name, []).append((node, False))
            a = node.args
            positional = a.posonlyargs + a.args
            pairs += [(p, d, "") for p, d in zip(positional[len(positional) - len(a.defaults):],
                                                 a.defaults)]
            pairs += [(p, d, "") for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else None
        for fn, method in defs.get(name, ()):
            params = fn.args.posonlyargs + fn.args.args
            if method and isinstance(node.func, ast.Attribute) and params:
                params = params[1:]
            for p, arg in zip(params, node.args):
                if not isinstance(arg, ast.Starred):
                    pairs.append((p, arg, ""))
            by_name = {p.arg: p for p in params + fn.args.kwonlyargs}
            for kw in node.keywords:
                if kw.arg in by_name:
                    pairs.append((by_name[kw.arg], kw.value, ""))
    return pairs


def parse(source):
    """ast.parse. CPython's parser gives up on very deep nesting (a+a+...+a, -----x) with
    RecursionError or MemoryError: that is the candidate's SyntaxError (Python could not compile
    the file either), not a failure of the script reading it."""
    try:
        return ast.parse(source)
    except (RecursionError, MemoryError):
        raise SyntaxError("too deeply nested for Python's parser",
                          ("candidate.py", 1, 1, "")) from None


def string_value(node, env):
    """The value of an expression built only from string literals, names bound to such
    expressions (env), `+` concatenation and f-strings whose fields are such names. None for
    anything dynamic (calls, subscripts, formatting with expressions). A name bound to a list of
    strings gives that list, and lists concatenate with lists only (a string plus a list is a
    TypeError when the file runs: None here)."""
    # The `+` chain is flattened with a stack, not by recursion: "a" + "b" + ... a few thousand
    # terms long is a file Python compiles, and must not exhaust the recursion limit here.
    values = []
    stack = [node]
    while stack:
        term = stack.pop()
        if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Add):
            stack += [term.right, term.left]
            continue
        value = term_value(term, env)
        if value is None:
            return None
        values.append(value)
    if all(isinstance(v, str) for v in values):
        return "".join(values)
    if all(isinstance(v, list) for v in values):
        return [item for v in values for item in v]
    return None


def term_value(node, env):
    """string_value of one term of a `+` chain."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(part.value)
            elif isinstance(part, ast.FormattedValue) and part.conversion == -1 \
                    and part.format_spec is None:
                value = string_value(part.value, env)
                if not isinstance(value, str):
                    return None
                out.append(value)
            else:
                return None
        return "".join(out)
    return None


def string_list_value(node, env):
    """A list/tuple of static strings, or one static string (load_inline accepts both)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [string_value(e, env) for e in node.elts]
        return None if any(v is None for v in values) else values
    if isinstance(node, ast.Name) and node.id in env and isinstance(env[node.id], list):
        return env[node.id]
    value = string_value(node, env)
    return None if value is None else [value]


def module_string_env(tree):
    """Module-level `name = <static string or list of static strings>` bindings, in order (a
    later binding replaces an earlier one, as Python would)."""
    env = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            value = string_value(node.value, env)
            if value is None and isinstance(node.value, (ast.List, ast.Tuple)):
                value = string_list_value(node.value, env)
            if value is not None:
                env[name] = value
            else:
                env.pop(name, None)
    return env


def load_inline_calls(tree, aliases):
    """(target name or None, Call node) for each load_inline call in the file."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and aliases.resolve(node.func) in (
                "load_inline", "torch.utils.cpp_extension.load_inline"):
            calls.append(node)
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and node.value in calls and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            bound[id(node.value)] = node.targets[0].id
    return [(bound.get(id(c)), c) for c in calls]


def strip_c_comments_and_strings(text):
    """C/C++/CUDA text with comments and string/char literals replaced by spaces (newlines
    kept, so offsets map to the same lines). Identifiers inside comments or messages then no
    longer count as uses."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def c_tokens(text):
    """(token, offset) pairs of a comment/string-free C text: identifiers (with `::` joined,
    e.g. `std::thread`), `<<<`, `>>>` and single punctuation characters."""
    tokens = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_" or
                             (text.startswith("::", j) and j + 2 < n and
                              (text[j + 2].isalpha() or text[j + 2] == "_"))):
                j += 2 if text.startswith("::", j) else 1
            tokens.append((text[i:j], i))
            i = j
        elif text.startswith("<<<", i) or text.startswith(">>>", i):
            tokens.append((text[i:i + 3], i))
            i += 3
        elif c.isspace():
            i += 1
        else:
            tokens.append((c, i))
            i += 1
    return tokens


def global_kernels(tokens):
    """Names of `__global__` functions: the identifier right before the first `(` after the
    `__global__` keyword."""
    names = []
    for k, (tok, _) in enumerate(tokens):
        if tok != "__global__":
            continue
        for m in range(k + 1, min(k + 40, len(tokens) - 1)):
            if tokens[m + 1][0] == "(" and tokens[m][0] not in ("__launch_bounds__",):
                names.append(tokens[m][0].split("::")[-1])
                break
    return names


def launched_kernels(tokens):
    """Names launched with `name<<<...>>>` or `name<T...><<<...>>>`."""
    names = []
    for k, (tok, _) in enumerate(tokens):
        if tok != "<<<":
            continue
        m = k - 1
        if m >= 0 and tokens[m][0] == ">":  # skip template arguments: name<...><<<
            depth = 0
            while m >= 0:
                if tokens[m][0] == ">":
                    depth += 1
                elif tokens[m][0] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                m -= 1
            m -= 1
        if m >= 0:
            names.append(tokens[m][0].split("::")[-1])
    return names


def line_of(text, offset):
    return text.count("\n", 0, offset)


def emit_json(obj):
    """Print obj as one JSON line in UTF-8. Non-ASCII text is written as is, not as \\u escapes
    (the C++ side's Cap'n Proto JSON decoder reads only ASCII escapes correctly); lone
    surrogates from odd source text become U+FFFD."""
    import json
    import sys
    text = json.dumps(obj, ensure_ascii=False)
    sys.stdout.buffer.write(text.encode("utf-8", "replace") + b"\n")
    sys.stdout.buffer.flush()
