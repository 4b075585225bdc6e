"""The BENCHMARKS.md headings the code and the docs cite exist (issue 52 item 1): a comment or a
doc gives the measurement behind a number as docs/BENCHMARKS.md, "a heading's words" (also
BENCHMARKS.md "...", ("...") or "section ..."), and those words must stand in one heading of
docs/BENCHMARKS.md ("..." inside the quote for words left out; case and line breaks aside). A
heading renamed, or a citation mistyped, then shows here instead of sending a reader into a
2,400-line file with nothing to find.

Run: python3 tests/docs/docs_benchmark_headings_test.py [REPO_ROOT]"""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_constants_test import ROOT, write_tree  # noqa: E402

BENCHMARKS = os.path.join("docs", "BENCHMARKS.md")
# BENCHMARKS.md, "words" / BENCHMARKS.md ("words") / BENCHMARKS "words" / BENCHMARKS.md section
# "words", read over comment leaders and line breaks (a citation may wrap), and inside a C++
# string (\"words\", an option's help).
CITATION = re.compile(
    r'BENCHMARKS(?:\.md)?\)?[,:]?\s*\(?\s*(?:section\s+|heading\s+)?\\?"([^"\\]+)\\?"')
# Where a line break inside a citation leaves a comment leader: // (C++), # (Python, YAML, shell),
# * (a block comment).
CONTINUATION = re.compile(r"\n\s*(?://+|#+|\*)?\s*")
# C++ string literals continued on the next line ("... " "..."): joined first.
STRING_BREAK = re.compile(r'"[ \t]*\n\s*"')
TEXT_FILES = (".cc", ".h", ".py", ".md", ".yaml", ".yml", ".js", ".txt", ".sh", ".capnp", ".in")
# This folder's own tests name the pattern, not a heading.
SKIPPED = ("tests/docs/",)


def normal(text):
    return re.sub(r"\s+", " ", text).strip().lower()


def headings(root):
    with open(os.path.join(root, BENCHMARKS), encoding="utf-8") as f:
        return [normal(line.lstrip("#")) for line in f if line.startswith("#")]


def tracked_files(root):
    """The files git tracks (every file below root where it is no git checkout)."""
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout:
        return listed.stdout.split("\n")
    return [os.path.relpath(os.path.join(folder, name), root)
            for folder, _, names in os.walk(root) for name in names]


def citations(root):
    """[(file, quoted words)] of every BENCHMARKS.md heading a tracked text file cites. Files
    without an extension are read when they are scripts under tools/."""
    out = []
    for rel in tracked_files(root):
        if not rel or rel.startswith(SKIPPED):
            continue
        if not rel.endswith(TEXT_FILES) and not (rel.startswith("tools/") and "." not in
                                                 os.path.basename(rel)):
            continue
        path = os.path.join(root, rel)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        for m in CITATION.finditer(CONTINUATION.sub(" ", STRING_BREAK.sub("", text))):
            if m.group(1).strip():
                out.append((rel, m.group(1)))
    return out


def cited(words, heads):
    """Whether one heading holds the cited words, parts left out at "..." in their order."""
    parts = [p.strip() for p in normal(words).split("...") if p.strip()]
    for head in heads:
        at = 0
        for part in parts:
            at = head.find(part, at)
            if at < 0:
                break
            at += len(part)
        else:
            return True
    return False


def missing_headings(root):
    heads = headings(root)
    return ['%s: BENCHMARKS.md, "%s" is no heading of docs/BENCHMARKS.md' % (rel, words)
            for rel, words in citations(root) if not cited(words, heads)]


class CitedBenchmarkHeadingsExistTest(unittest.TestCase):
    def test_every_cited_heading_exists(self):
        wrong = missing_headings(ROOT)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_the_reading_finds_citations_in_code_and_docs(self):
        found = citations(ROOT)
        self.assertGreaterEqual(len(found), 30)
        files = {rel for rel, _ in found}
        self.assertTrue(any(f.endswith((".h", ".cc")) for f in files), files)
        self.assertTrue(any(f.endswith(".md") for f in files), files)

    def test_a_renamed_heading_is_named(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, {
                BENCHMARKS: "# Results\n## Compile memory builds really use (issue 50), dev VM\n",
                "lib/a.h": '// 4096 (docs/BENCHMARKS.md, "Compile memory\n// builds really use").\n'
                           '// Also docs/BENCHMARKS.md "compile memory ... dev VM" and\n'
                           '// BENCHMARKS.md ("Compile memory that builds use").\n'
                           '"(docs/BENCHMARKS.md, \\"Compile memory ... dev VM\\")"\n'
                           '"(docs/BENCHMARKS.md "\n    "\\"Timing on the H100\\")"\n',
                "README.md": 'See docs/BENCHMARKS.md, section "Results" and "Gone away".\n'
                             'And BENCHMARKS.md, "Timing on the H200".\n'})
            wrong = missing_headings(root)
            self.assertEqual(sorted(wrong), [
                'README.md: BENCHMARKS.md, "Timing on the H200" is no heading of '
                'docs/BENCHMARKS.md',
                'lib/a.h: BENCHMARKS.md, "Compile memory that builds use" is no heading of '
                'docs/BENCHMARKS.md',
                'lib/a.h: BENCHMARKS.md, "Timing on the H100" is no heading of '
                'docs/BENCHMARKS.md'])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
