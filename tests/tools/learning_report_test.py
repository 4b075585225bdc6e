"""tools/learning-report on a synthetic `dice-log export`: the table in the order the phases ran,
the bootstrap verdict on a real gain and on none, and where the candidates failed."""

import importlib.machinery
import importlib.util
import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tools", "learning-report")


def load_report():
    loader = importlib.machinery.SourceFileLoader("learning_report", SCRIPT)
    spec = importlib.util.spec_from_loader("learning_report", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def record(kind, **fields):
    return json.dumps({"kind": kind, "record": fields})


def export(correct_before, correct_after, failure="staticCheck"):
    """Two evaluation phases of len(correct_before) tasks each (steps 0 and 2), an RL step
    between, the metrics a learner writes for them, and one candidate per task."""
    lines = [
        record("step", step="0", phaseName="eval-sft-e2e", evaluation=True),
        record("step", step="1", phaseName="e2e"),
        record("step", step="2", phaseName="eval-e2e-e2e", evaluation=True),
    ]
    for step, phase, correct in (("0", "eval-sft-e2e", correct_before),
                                 ("2", "eval-e2e-e2e", correct_after)):
        rate = sum(correct) / len(correct)
        lines.append(record("metric", name="eval/%s/exec" % phase, step=step, value=rate))
        lines.append(record("metric", name="eval/%s/tasks" % phase, step=step, value=len(correct)))
        for t, ok in enumerate(correct):
            verdict = {"step": step, "taskId": "task-%d" % t, "sampleIndex": 0, "correct": ok}
            if not ok:
                verdict["failure"] = failure
                verdict["findings"] = [{"check": "kernel-not-launched", "fatal": True}]
            # The answer text follows correctness: tasks that flipped got another answer.
            lines.append(record("candidate", verdict=verdict,
                                responseText="answer %d %s" % (t, ok)))
    return "\n".join(lines) + "\n"


class LearningReportTest(unittest.TestCase):
    def setUp(self):
        self.report = load_report()

    def run_report(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(self.report.main(["--export", f.name]), 0)
        return out.getvalue()

    def test_phases_in_the_order_they_ran(self):
        # "eval-e2e-e2e" sorts before "eval-sft-e2e" by name; it ran after it.
        text = self.run_report(export([False] * 4, [True] * 4))
        self.assertLess(text.index("| eval-sft-e2e |"), text.index("| eval-e2e-e2e |"))

    def test_a_gain_on_most_tasks_is_more_than_noise(self):
        text = self.run_report(export([False] * 40, [True] * 30 + [False] * 10))
        self.assertIn("eval-sft-e2e -> eval-e2e-e2e: Exec +0.750", text)
        self.assertNotIn("within noise", text)

    def test_one_task_of_forty_is_within_noise(self):
        text = self.run_report(export([False] * 40, [True] + [False] * 39))
        self.assertIn("Exec +0.025", text)
        self.assertIn("within noise", text)
        self.assertIn("; 1 of 40 answers changed", text)

    def test_failures_are_counted_by_class_and_check(self):
        text = self.run_report(export([False] * 3, [True, False, False], failure="syntaxError"))
        self.assertIn("| eval-sft-e2e | syntaxError 3 | kernel-not-launched 3 |", text)
        self.assertIn("| eval-e2e-e2e | syntaxError 2, correct 1 | kernel-not-launched 2 |", text)


if __name__ == "__main__":
    unittest.main()
