"""The files the docs name exist (issue 52 item 1): wherever README.md, a file of docs/ (not
BENCHMARKS.md, a record of its day), a tools/ README, an option's help (`dice-config docs`;
DICE_CONFIG_EXE names the binary) or a command's --help (DICE_HELP_EXES, the executables
separated by os.pathsep) names a file of this repository by its path
(`common/exit_codes.h`, reward/compile/compile_limits.h), that file must be there, so a doc never
sends a reader to a file that moved or went. A path is read when it starts with a top-level
folder of the repository and ends in a file name with an extension; other paths (a checkout of
KernelBench's, a build folder, `python/judge.py` said within reward/) are not this tree's.

Run: python3 tests/docs/docs_paths_test.py [REPO_ROOT]"""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_constants_test import ROOT, SKIPPED_DIRS, doc_files, write_tree  # noqa: E402

# folder/.../name.ext, not inside a longer path or word, without wildcards or placeholders.
PATH = re.compile(r"(?<![\w/.<>*-])((?:[A-Za-z_][\w.-]*/)+[\w-][\w.-]*\.[A-Za-z0-9]+)(?![\w/*<>])")


def top_folders(root):
    """The repository's top-level folders a doc may name a file under."""
    return {name for name in os.listdir(root)
            if os.path.isdir(os.path.join(root, name)) and name not in SKIPPED_DIRS
            and not name.startswith(("build", "."))}


def paths_in(name, lines, folders):
    """[(name, line number, path)] of the files of this tree that `lines` name."""
    out = []
    for number, line in enumerate(lines, 1):
        for m in PATH.finditer(line):
            named = m.group(1).rstrip(".")
            if named.split("/", 1)[0] in folders:
                out.append((name, number, named))
    return out


def named_paths(root):
    """[(doc, line number, path)] of every file of this tree a doc names by its path."""
    folders = top_folders(root)
    out = []
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            out += paths_in(os.path.relpath(path, root), f.read().splitlines(), folders)
    return out


def config_docs_paths(root, exe):
    """The same for the option help `dice-config docs` prints, every kind of file."""
    folders = top_folders(root)
    out = []
    for kind in ("dice", "curriculum", "model"):
        text = subprocess.run([exe, "docs", "--kind", kind], capture_output=True, text=True,
                              check=True).stdout
        out += paths_in("dice-config docs --kind " + kind, text.splitlines(), folders)
    return out


def help_text_paths(root, exes):
    """The same for the --help of each executable in `exes`."""
    folders = top_folders(root)
    out = []
    for exe in exes:
        ran = subprocess.run([exe, "--help"], capture_output=True, text=True)
        out += paths_in(os.path.basename(exe) + " --help", (ran.stdout + ran.stderr).splitlines(),
                        folders)
    return out


def missing_paths(root, named=None):
    """The named paths that are no file, from the repository's root or the doc's own folder (a
    tools/ README names its files from there)."""
    return ["%s:%d: %s is no file of the repository" % (doc, number, path)
            for doc, number, path in (named_paths(root) if named is None else named)
            if not os.path.exists(os.path.join(root, path))
            and not os.path.exists(os.path.join(root, os.path.dirname(doc), path))]


class DocsNameFilesThatExistTest(unittest.TestCase):
    def test_every_named_file_exists(self):
        wrong = missing_paths(ROOT)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_every_file_the_option_help_names_exists(self):
        exe = os.environ.get("DICE_CONFIG_EXE")
        if not exe or not os.path.exists(exe):
            self.skipTest("DICE_CONFIG_EXE names no dice-config binary")
        named = config_docs_paths(ROOT, exe)
        self.assertIn("reward/python/judge.py", {p for _, _, p in named})
        wrong = missing_paths(ROOT, named)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_every_file_a_help_text_names_exists(self):
        exes = [e for e in os.environ.get("DICE_HELP_EXES", "").split(os.pathsep) if e]
        if not exes or not all(os.path.exists(e) for e in exes):
            self.skipTest("DICE_HELP_EXES names no executables (or one not built)")
        named = help_text_paths(ROOT, exes)
        self.assertIn("reward/judge/judge_items.h", {p for _, _, p in named})
        wrong = missing_paths(ROOT, named)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_the_reading_finds_paths(self):
        named = {p for _, _, p in named_paths(ROOT)}
        self.assertGreaterEqual(len(named), 50)
        self.assertIn("common/exit_codes.h", named)

    def test_a_moved_file_is_named(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, {
                "tools": None,
                "lib/sub/here.h": "\n",
                "README.md": "See `lib/sub/here.h` and lib/gone.cc. Not ours: src/kb/x.py, "
                             "python/judge.py, lib/<name>.h, lib/*.h, "
                             "https://example.org/lib/a.html.\n",
                "docs/A.md": "(lib/sub/moved.py).\n"})
            wrong = missing_paths(root)
            self.assertEqual(wrong, ["README.md:1: lib/gone.cc is no file of the repository",
                                     "docs/A.md:1: lib/sub/moved.py is no file of the repository"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
