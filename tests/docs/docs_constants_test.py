"""The constants the docs quote are the code's (issue 50 item 5, issue 52 item 1): wherever
README.md or a file of docs/ quotes a named constant with its value (`NAME = VALUE`, `NAME` =
VALUE, `NAME` (VALUE), or VALUE (`NAME` as in "exits 4 (`kExitNoDevice`)"), NAME must be a
constant of the code (a module-level assignment of a Python file, or a constexpr/const of a C++
file, anywhere in the tree but build folders) and VALUE its value. docs/BENCHMARKS.md is
exempt: it is a record of past runs, with the values of their day. Names of the system's (errno values, socket families, scheduler classes) and
lower-case names (examples, formulas) are not read.

Run: python3 tests/docs/docs_constants_test.py [REPO_ROOT]"""

import ast
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-")
                       else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Folders never read for code: build output, vendored or fetched trees, test outputs.
SKIPPED_DIRS = {".git", "build", "node_modules", "__pycache__", ".device", ".bundle", "third_party"}
# Documents that are records of their day, not claims about the code.
HISTORY = {"BENCHMARKS.md"}
# A constant's name as the code spells it: UPPER_CASE (Python) or kCamelCase (C++).
NAME = r"(?:[A-Z][A-Z0-9]*_[A-Z0-9_]+|[A-Z]{2,}[A-Z0-9]*|k[A-Z][A-Za-z0-9]+)"
QUOTES = [
    # `NAME = VALUE`, spaced as code is (an environment variable's `NAME=value` is not read)
    re.compile(r"`(" + NAME + r")\s+=\s+([^`]+)`"),
    re.compile(r"`(" + NAME + r")`\s*=\s*([-0-9.e]+)(?![\w.])"),  # `NAME` = 1e-4
    re.compile(r"`(" + NAME + r")`\s*\(([^)]*)\)"),              # `NAME` (6.0), `NAME` (1 MiB)
]
# A value before the constant it is: exits 4 (`kExitNoDevice`, ...), 4096 (`kBuildMemoryMb`).
VALUE_FIRST = re.compile(r"(?<![\w.])(-?[0-9]+(?:\.[0-9]+)?)\s+\(`(" + NAME + r")`")
# Names of the system or of other projects, quoted with values that are theirs.
FOREIGN = {"EPERM", "SCHED_BATCH", "AF_NETLINK", "AF_UNIX", "AF_INET", "AF_INET6", "AF_VSOCK"}


def arithmetic(node):
    """The value of a literal or integer/float arithmetic on literals, else raises ValueError."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(arithmetic(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -arithmetic(node.operand)
    if isinstance(node, ast.BinOp):
        left, right = arithmetic(node.left), arithmetic(node.right)
        ops = {ast.Add: lambda: left + right, ast.Sub: lambda: left - right,
               ast.Mult: lambda: left * right, ast.Div: lambda: left / right,
               ast.Pow: lambda: left ** right, ast.LShift: lambda: left << right,
               ast.FloorDiv: lambda: left // right}
        if type(node.op) in ops:
            return ops[type(node.op)]()
    raise ValueError("not arithmetic")


def value_of(text):
    """A quoted or coded value as a Python value: numbers (C++ suffixes and digit separators
    dropped), strings, tuples; None where it is something else (an expression, a unit)."""
    text = text.strip().rstrip(";").strip()
    text = re.sub(r"(?<=\d)'(?=\d)", "", text)  # 1'000
    text = re.sub(r"(?<=[\d.])(?:ULL|LL|UL|U|L|F|f)\b", "", text)
    if text.startswith("{") and text.endswith("}"):
        text = "(" + text[1:-1] + ",)"
    try:
        return arithmetic(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError):
        return None


def code_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("build")]
        for name in files:
            if name.endswith((".py", ".h", ".cc")):
                yield os.path.join(folder, name)


CPP_CONSTANT = re.compile(r"(?:constexpr|const)\s+[\w:<>,\s*&]*?\b(" + NAME +
                          r")(?:\[\])?\s*(?:=\s*([^;{]+|\{[^;]*\})|\{([^;]*)\});")


def code_constants(root):
    """{name: [(file, value or None)]} of every constant the code defines."""
    found = {}
    for path in code_files(root):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        rel = os.path.relpath(path, root)
        if path.endswith(".py"):
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and re.fullmatch(NAME, target.id):
                            try:
                                value = arithmetic(node.value)
                            except (ValueError, TypeError, ZeroDivisionError):
                                value = None
                            found.setdefault(target.id, []).append((rel, value))
        else:
            for m in CPP_CONSTANT.finditer(text):
                code = m.group(2) if m.group(2) is not None else "{" + (m.group(3) or "") + "}"
                found.setdefault(m.group(1), []).append((rel, value_of(code)))
    return found


def doc_files(root):
    yield os.path.join(root, "README.md")
    docs = os.path.join(root, "docs")
    for name in sorted(os.listdir(docs)):
        if name.endswith(".md") and name not in HISTORY:
            yield os.path.join(docs, name)
    for folder, dirs, files in os.walk(os.path.join(root, "tools")):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            if name == "README.md":
                yield os.path.join(folder, name)


def doc_lines(root):
    """(doc relative to root, line number, line) of every line of every doc_files one."""
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            yield os.path.relpath(path, root), number, line


def write_tree(root, files):
    """A test's tree under root: {path relative to root: text}, or None for an empty folder."""
    for name, text in files.items():
        path = os.path.join(root, name)
        if text is None:
            os.makedirs(path, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def quotes(root):
    """[(doc, line number, name, quoted text)] of every constant a doc quotes with a value."""
    out = []
    for doc, number, line in doc_lines(root):
        for pattern in QUOTES:
            for m in pattern.finditer(line):
                if m.group(1) not in FOREIGN:
                    out.append((doc, number, m.group(1), m.group(2)))
        for m in VALUE_FIRST.finditer(line):
            if m.group(2) not in FOREIGN:
                out.append((doc, number, m.group(2), m.group(1)))
    return out


def same(doc, code):
    if isinstance(doc, float) or isinstance(code, float):
        try:
            return abs(float(doc) - float(code)) <= 1e-12 * max(1.0, abs(float(code)))
        except (TypeError, ValueError):
            return False
    return doc == code


def mismatches(root):
    constants = code_constants(root)
    wrong = []
    for doc, number, name, quoted in quotes(root):
        where = "%s:%d: `%s`" % (doc, number, name)
        if name not in constants:
            wrong.append("%s is quoted with %r but no code defines it" % (where, quoted))
            continue
        want = value_of(quoted)
        if want is None:
            continue  # a unit or an expression: the name's existence is what can be checked
        values = [v for _, v in constants[name] if v is not None]
        if values and not any(same(want, v) for v in values):
            wrong.append("%s is quoted as %r; the code has %s" % (
                where, quoted.strip(), ", ".join("%r in %s" % (v, f)
                                                for f, v in constants[name])))
    return wrong


# An option quoted with a number in parentheses, `cluster.transport.max_attempts` (3): its
# default, as `dice-config docs` lists it (DICE_CONFIG_EXE names the binary).
OPTION_QUOTE = re.compile(r"`([a-z_]+(?:\.[a-z_0-9]+)+)`\s*\(([-0-9.e]+)\)")
OPTION_ROW = re.compile(r"\| `([^`]+)` \| [^|]* \| `([^`]*)` \|")


def option_defaults(exe):
    """{key: default text} from `dice-config docs`' table."""
    out = subprocess.run([exe, "docs"], capture_output=True, text=True, check=True).stdout
    return {m.group(1): m.group(2) for m in map(OPTION_ROW.match, out.splitlines()) if m}


def option_mismatches(root, defaults):
    wrong = []
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for m in OPTION_QUOTE.finditer(line):
                    key, quoted = m.groups()
                    where = "%s:%d: `%s`" % (os.path.relpath(path, root), number, key)
                    if key not in defaults:
                        wrong.append("%s (%s) is no option of dice-config docs" % (where, quoted))
                    elif not same(value_of(quoted), value_of(defaults[key])):
                        wrong.append("%s is quoted with (%s); its default is %s" % (
                            where, quoted, defaults[key]))
    return wrong


class DocsQuoteTheCodesConstantsTest(unittest.TestCase):
    def test_every_option_quoted_with_a_number_has_that_default(self):
        exe = os.environ.get("DICE_CONFIG_EXE")
        if not exe or not os.path.exists(exe):
            self.skipTest("DICE_CONFIG_EXE names no dice-config binary")
        defaults = option_defaults(exe)
        self.assertIn("cluster.transport.max_attempts", defaults)
        wrong = option_mismatches(ROOT, defaults)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_every_quoted_constant_is_the_codes(self):
        wrong = mismatches(ROOT)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_the_reading_finds_quotes_and_constants(self):
        # The check reads something: quotes in the docs, and those names among the constants.
        found = quotes(ROOT)
        self.assertGreaterEqual(len(found), 10)
        names = {name for _, _, name, _ in found}
        self.assertIn("DIGEST_SIGMAS", names)
        self.assertIn("kExitNoDevice", names)  # exits 4 (`kExitNoDevice`, ...): value first
        constants = code_constants(ROOT)
        self.assertIn(("reward/python/timed_calls.py", 6.0), constants["DIGEST_SIGMAS"])

    def test_values_are_read_as_the_code_writes_them(self):
        self.assertEqual(value_of("1 << 20"), 1 << 20)
        self.assertEqual(value_of("2**36"), 2 ** 36)
        self.assertEqual(value_of("(1 << 63) - 1"), (1 << 63) - 1)
        self.assertEqual(value_of("20ULL"), 20)
        self.assertEqual(value_of("0.5f"), 0.5)
        self.assertEqual(value_of('("vendor-library",)'), ("vendor-library",))
        self.assertEqual(value_of('"library-calls"'), "library-calls")
        self.assertIsNone(value_of("1 MiB"))
        self.assertIsNone(value_of("max(2, ceil(x))"))

    def test_a_stale_quote_is_named(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, {
                "lib/limits.py": "MAX_ITEMS = 1 << 4\nRATE = 0.5\n",
                "lib/limits.h": "constexpr int kRetries = 3;\n",
                "README.md": "Up to `MAX_ITEMS = 16` items, `kRetries` (3) tries, exits 2 "
                             "(`kRetries`, lib/limits.h).\n",
                "docs/A.md": "`RATE` = 0.25 and `GONE_AWAY = 2`.\n"})
            wrong = mismatches(root)
            self.assertEqual(len(wrong), 3, wrong)
            self.assertTrue(any("README.md:1: `kRetries` is quoted as '2'; the code has 3" in w
                                for w in wrong), wrong)
            self.assertTrue(any("docs/A.md:1: `RATE` is quoted as '0.25'; the code has 0.5" in w
                                for w in wrong), wrong)
            self.assertTrue(any("`GONE_AWAY` is quoted with '2' but no code defines it" in w
                                for w in wrong), wrong)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
