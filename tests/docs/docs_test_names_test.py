"""The tests the docs cite exist (issue 52 item 1): wherever README.md, a file of docs/ (not
BENCHMARKS.md, a record of its day) or a tools/ README names a test as `Suite.Case` or
`Suite.*`, the suite must be a test suite of tests/ (a GoogleTest TEST/TEST_F/TEST_P/TYPED_TEST
suite, or a Python unittest class) and the case one of its cases. A doc's coverage claim ("what
contains it | tests") is then never a test that was renamed or removed. A quoted `Name.Member`
whose Name is no suite is read only when Name ends in Test (a suite gone); other names
(`Verdict.reusedFrom`, `Envelope.Cancel`) are the code's, not tests.

Run: python3 tests/docs/docs_test_names_test.py [REPO_ROOT]"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_constants_test import ROOT, SKIPPED_DIRS, doc_lines, write_tree  # noqa: E402

CITED = re.compile(r"`([A-Z][A-Za-z0-9_]*)\.([A-Z][A-Za-z0-9_]*|test\w*|\*)`")
GTEST = re.compile(r"\b(?:TEST|TEST_F|TEST_P|TYPED_TEST)\(\s*(\w+)\s*,\s*(\w+)\s*\)")
PY_CLASS = re.compile(r"^class (\w+)\(")
PY_CASE = re.compile(r"^\s+def (test\w*)\(")


def test_suites(root):
    """{suite: {case}} of every GoogleTest and unittest test under tests/."""
    suites = {}
    for folder, dirs, files in os.walk(os.path.join(root, "tests")):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith((".cc", ".h")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    for m in GTEST.finditer(f.read()):
                        suites.setdefault(m.group(1), set()).add(m.group(2))
            elif name.endswith(".py"):
                suite = None
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        m = PY_CLASS.match(line)
                        if m:
                            suite = m.group(1)
                            suites.setdefault(suite, set())
                        m = PY_CASE.match(line)
                        if m and suite:
                            suites[suite].add(m.group(1))
    return suites


def cited_tests(root):
    """[(doc, line number, suite, case or '*')] of every test a doc names."""
    return [(doc, number, m.group(1), m.group(2)) for doc, number, line in doc_lines(root)
            for m in CITED.finditer(line)]


def missing_tests(root):
    suites = test_suites(root)
    wrong = []
    for doc, number, suite, case in cited_tests(root):
        where = "%s:%d: `%s.%s`" % (doc, number, suite, case)
        if suite not in suites:
            if suite.endswith("Test"):
                wrong.append("%s: no test suite %s in tests/" % (where, suite))
        elif case != "*" and case not in suites[suite]:
            wrong.append("%s: suite %s has no case %s" % (where, suite, case))
    return wrong


class DocsCiteTestsThatExistTest(unittest.TestCase):
    def test_every_cited_test_exists(self):
        wrong = missing_tests(ROOT)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_the_reading_finds_citations_and_suites(self):
        # The check reads something: citations in the docs, and their suites among the tests.
        cited = cited_tests(ROOT)
        self.assertGreaterEqual(len(cited), 50)
        suites = test_suites(ROOT)
        self.assertIn("ACancelKillsTheJudgingInProgress", suites["EvaluatorCancelTest"])
        self.assertIn("EvaluatorCancelTest", {suite for _, _, suite, _ in cited})
        self.assertIn("test_every_cited_test_exists", suites["DocsCiteTestsThatExistTest"])

    def test_a_gone_test_is_named(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, {
                "tools": None,
                "tests/a/a_test.cc": "TEST(KeptTest, StillHere) {}\nTEST_F(Fixture, Case) {}\n",
                "tests/a/b_test.py": "class PyTest(unittest.TestCase):\n    def test_one(self):\n",
                "README.md": "`KeptTest.StillHere`, `KeptTest.Renamed`, `Fixture.*`, "
                             "`PyTest.test_one`\n",
                "docs/A.md": "`GoneTest.Case`, `Verdict.ReusedFrom`, `PyTest.test_two`\n"})
            wrong = missing_tests(root)
            self.assertEqual(len(wrong), 3, wrong)
            self.assertIn("README.md:1: `KeptTest.Renamed`: suite KeptTest has no case Renamed",
                          wrong)
            self.assertIn("docs/A.md:1: `GoneTest.Case`: no test suite GoneTest in tests/", wrong)
            self.assertIn("docs/A.md:1: `PyTest.test_two`: suite PyTest has no case test_two",
                          wrong)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
