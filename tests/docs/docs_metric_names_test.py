"""The metric series the docs name are the code's (issue 52 item 1): wherever README.md, a file of
docs/ (not BENCHMARKS.md, a record of its day) or a tools/ README names a reward-log metric as
`learner/...`, `reward/...`, `rollout/...`, `sft/...`, `schedule/...` or `eval/...`, a C++ file
must spell that name, or a longer one it begins (a family such as `learner/staleness`), as a
string literal. A name that is a file of the repository (`learner/run_loop.cc`, a bench by its
target's name) or a pattern (`eval/<phase>/...`) is not read.

Run: python3 tests/docs/docs_metric_names_test.py [REPO_ROOT]"""

import glob
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_constants_test import ROOT, SKIPPED_DIRS, doc_lines, write_tree  # noqa: E402

METRIC = re.compile(r"`((?:learner|reward|rollout|sft|schedule|eval)/[a-z_0-9]+(?:/[a-z_0-9]+)*)`")
LITERAL = re.compile(r'"((?:learner|reward|rollout|sft|schedule|eval)/[a-z_0-9/]*)"')


def code_literals(root):
    """Every string literal of a C++ file that starts like a metric name."""
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("build")]
        for name in files:
            if name.endswith((".cc", ".h")):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    found.update(LITERAL.findall(f.read()))
    return found


def is_a_file(root, doc_folder, name):
    """Whether `name` is a file or folder of the tree, or a source without its extension (a
    bench a tools/ README names by its target), from the root or the doc's folder."""
    return any(os.path.exists(base) or glob.glob(base + ".*")
               for base in (os.path.join(root, name), os.path.join(doc_folder, name)))


def named_metrics(root):
    """[(doc, line number, metric)] of every metric name a doc quotes."""
    return [(doc, number, m.group(1)) for doc, number, line in doc_lines(root)
            for m in METRIC.finditer(line)
            if not is_a_file(root, os.path.join(root, os.path.dirname(doc)), m.group(1))]


def unknown_metrics(root):
    literals = code_literals(root)
    return ["%s:%d: `%s` is no metric the code names" % (doc, number, metric)
            for doc, number, metric in named_metrics(root)
            if not any(literal.startswith(metric) for literal in literals)]


class DocsNameTheCodesMetricsTest(unittest.TestCase):
    def test_every_named_metric_is_the_codes(self):
        wrong = unknown_metrics(ROOT)
        self.assertEqual(wrong, [], "\n" + "\n".join(wrong))

    def test_the_reading_finds_metrics(self):
        named = {m for _, _, m in named_metrics(ROOT)}
        self.assertIn("learner/staleness_mean", named)
        self.assertIn("learner/staleness_mean", code_literals(ROOT))

    def test_an_unknown_metric_is_named(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, {
                "docs": None, "tools": None,
                "lib/m.cc": 'log("learner/lr", lr);\nlog("reward/internal_errors", n);\n',
                "README.md": "Series `learner/lr`, `reward/internal` (a family) and "
                             "`learner/learning_rate`.\n"})
            self.assertEqual(unknown_metrics(root), [
                "README.md:1: `learner/learning_rate` is no metric the code names"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
