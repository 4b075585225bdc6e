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
    """Maps local names to the dotted module paths they were imported as, so that
    `F.relu`, `nn.functional.relu` and `from torch.nn.functional import relu` all resolve to
    `torch.nn.functional.relu`."""

    def __init__(self, tree):
        self.names = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.names[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.names[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.names[a.asname or a.name] = node.module + "." + a.name

    def resolve(self, expr):
        """Dotted name of a Name/Attribute chain with the root alias expanded, else None."""
        parts = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        root = self.names.get(expr.id, expr.id)
        return ".".join([root] + list(reversed(parts)))

    def is_module_root(self, name):
        return name in self.names


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
