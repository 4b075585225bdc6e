"""tools/learning-report on scripted `dice-log export` records: stages of evaluations, pool pass@1
over every sample of a task, the interval that resamples op keys rather than tasks, the noise
floor from a repeated evaluation and the sentence that weighs a change against it, and where the
candidates failed."""

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


class Run:
    """A run's export as the learner writes it: steps (64-bit integers as strings), the
    candidates of every sample, a task record per task, the eval/ metrics."""

    def __init__(self):
        self.lines, self.step, self.tasks = [], 0, set()

    def train(self, phase="e2e"):
        self.lines.append(record("step", step=str(self.step), phaseName=phase))
        self.step += 1

    def evaluate(self, phase, version, results, kind="e2e", texts=None, failure="staticCheck"):
        """results: {task: [correct of sample 0, 1, ...]}; texts: {task: first answer}."""
        step = str(self.step)
        self.lines.append(record("step", step=step, phaseName=phase, evaluation=True,
                                 policyVersion=str(version)))
        firsts = [samples[0] for samples in results.values()]
        self.lines.append(record("metric", name="eval/%s/exec" % phase, step=step,
                                 value=sum(firsts) / len(firsts)))
        self.lines.append(record("metric", name="eval/%s/tasks" % phase, step=step,
                                 value=len(firsts)))
        for task, samples in results.items():
            if task not in self.tasks:
                self.tasks.add(task)
                self.lines.append(record("task", taskId=task, phase=kind))
            for i, ok in enumerate(samples):
                verdict = {"step": step, "taskId": task, "sampleIndex": i, "correct": ok}
                if not ok:
                    verdict["failure"] = failure
                    verdict["findings"] = [{"check": "kernel-not-launched", "fatal": True}]
                # By default the answer follows correctness: a task that flipped changed answer.
                text = (texts or {}).get(task, "answer %s %s" % (task, ok))
                self.lines.append(record("candidate", verdict=verdict, responseText=text))
        self.step += 1

    def text(self):
        return "\n".join(self.lines) + "\n"


def clustered(keys, per_key, passing):
    """{task: [correct]} for `keys` op keys of `per_key` tasks each; the keys in `passing` pass."""
    return {"t%d-%d" % (k, j): [k in passing] for k in range(keys) for j in range(per_key)}


class LearningReportTest(unittest.TestCase):
    def setUp(self):
        self.report = load_report()
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def task_file(self, name, tasks, key=lambda t: "k" + t[1:].split("-")[0]):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump([{"id": t, "level": "1", "op_key": key(t)} for t in tasks], f)
        return path

    def run_report(self, text, *args):
        path = os.path.join(self.dir.name, "run.jsonl")
        with open(path, "w") as f:
            f.write(text)
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(self.report.main(["--export", path] + list(args)), 0)
        return out.getvalue()

    def change_line(self, text, what):
        lines = [l for l in text.splitlines() if l.startswith("- " + what)]
        self.assertEqual(len(lines), 1, text)
        return lines[0]

    def sft_then_rl(self, sft, repeat, end, split_file="heldout_indist_e2e.json"):
        """An in-distribution evaluation after SFT (version 1), its repeat, RL steps, and the
        evaluation after them (version 3)."""
        run = Run()
        run.evaluate("eval-sft-indist-e2e", 1, sft)
        run.evaluate("eval-sft-repeat-indist-e2e", 1, repeat)
        run.train()
        run.train()
        run.evaluate("eval-e2e-indist-e2e", 3, end)
        return run.text(), self.task_file(split_file, list(sft))

    def test_a_gain_over_most_keys_is_beyond_an_unmoved_floor(self):
        text, tasks = self.sft_then_rl(clustered(12, 4, set()), clustered(12, 4, set()),
                                       clustered(12, 4, set(range(9))))
        line = self.change_line(self.run_report(text, "--tasks", tasks), "e2e in-dist Exec")
        self.assertIn(": .000 -> .750, change +0.750", line)
        self.assertIn("48 tasks, 12 keys", line)
        self.assertIn("floor 0.000 (repeat at eval-sft: +0.000", line)
        self.assertIn("0 of 48 answers changed", line)
        self.assertTrue(line.endswith(": beyond the noise floor (a gain)"), line)

    def test_a_change_smaller_than_the_repeats_own_is_within_the_floor(self):
        # The repeat of the unchanged checkpoint flips two keys each way (8 tasks up, 8 down);
        # RL then gains one key (4 tasks): less than the repeat moved.
        sft = clustered(12, 4, {0, 1})
        text, tasks = self.sft_then_rl(sft, clustered(12, 4, {2, 3}), clustered(12, 4, {0, 1, 2}))
        line = self.change_line(self.run_report(text, "--tasks", tasks), "e2e in-dist Exec")
        self.assertIn("change +0.083", line)
        self.assertIn("16 of 48 answers changed", line)
        floor = float(line.split("; floor ")[1].split(" ")[0])
        self.assertGreater(floor, 0.083)
        self.assertTrue(line.endswith(": within the noise floor"), line)

    def test_the_interval_resamples_op_keys_not_tasks(self):
        # 6 keys of 8 tasks; RL flips two whole keys. Over tasks (48 independent draws) the gain
        # looks certain; over keys (6 draws) no key of the two is drawn in (4/6)^6 = 9% of the
        # resamples, so the interval reaches 0 and the change is not beyond the floor.
        sft, end = clustered(6, 8, set()), clustered(6, 8, {0, 1})
        text, tasks = self.sft_then_rl(sft, sft, end)
        by_key = self.change_line(self.run_report(text, "--tasks", tasks), "e2e in-dist Exec")
        by_task = self.change_line(self.run_report(text), "e2e in-dist Exec")
        self.assertIn("change +0.333", by_key)
        self.assertIn("48 tasks, 6 keys", by_key)
        self.assertIn("48 tasks, 48 keys", by_task)
        lo = lambda line: float(line.split("(interval ")[1].split(" ")[0])
        self.assertEqual(lo(by_key), 0.0)
        self.assertGreater(lo(by_task), 0.15)
        self.assertTrue(by_key.endswith("within the noise floor"), by_key)
        self.assertTrue(by_task.endswith("beyond the noise floor (a gain)"), by_task)

    def test_pool_pass_at_1_is_the_mean_over_every_sample_with_a_wilson_interval(self):
        run = Run()
        pool = {"t0-0": [False, True, True, True], "t0-1": [True, True, True, True],
                "t1-0": [False, False, False, False], "t1-1": [False, False, True, False]}
        run.evaluate("eval-sft-pool-e2e", 1, pool)
        run.train()
        later = dict(pool, **{"t1-0": [True, True, False, False]})
        run.evaluate("eval-e2e-pool-e2e", 2, later)
        tasks = self.task_file("rl_e2e.json", list(pool))
        text = self.run_report(run.text(), "--tasks", tasks)
        # Exec would count the first sample only: 1 of 4. pass@1 is (3 + 4 + 0 + 1) / 16.
        stage = [l for l in text.splitlines() if l.startswith("| eval-sft-pool-e2e |")][0]
        self.assertIn("| .500 [", stage)
        self.assertIn("(4 tasks, 2 keys)", stage)
        self.assertIn("| t0-0 | k0 | 3/4 .750 [.301, .954] | 3/4 .750 [.301, .954] |", text)
        self.assertIn("| t1-0 | k1 | 0/4 .000 [.000, .490] | 2/4 .500 [.150, .850] |", text)
        line = self.change_line(text, "e2e pool pass@1")
        self.assertIn(".500 -> .625, change +0.125", line)
        self.assertIn("sampled, its draws' noise inside the interval (floor 0)", line)

    def test_stages_split_where_the_policy_changed_or_training_ran(self):
        run = Run()
        run.evaluate("eval-init-e2e", 0, {"a": [False]})
        run.evaluate("eval-sft-ood-e2e", 1, {"a": [False]})
        run.evaluate("eval-sft-indist-e2e", 1, {"b": [True]})
        run.train()  # an RL phase that did not update: same version, another stage
        run.evaluate("eval-rl-ood-e2e", 1, {"a": [True]})
        text = self.run_report(run.text())
        rows = [l.split(" | ")[0] for l in text.splitlines()
                if l.startswith("| eval") and "Exec /" not in l and "[" in l]
        self.assertEqual(rows, ["| eval-init-e2e", "| eval-sft", "| eval-rl-ood-e2e"])
        # By default the first trained stage against the last.
        self.assertIn("Changes eval-sft -> eval-rl-ood-e2e", text)
        self.assertIn("no task file (give --tasks DIR): each task is its own key", text)
        line = self.change_line(text, "e2e OOD Exec")
        self.assertIn("floor not measured (no repeat evaluation): the interval alone", line)

    def test_a_run_from_a_checkpoint_compares_its_first_stage_with_its_last(self):
        # learner.init_checkpoint: the first evaluation may judge version 0, and no stage before
        # the last is of a trained version; the default compares first with last all the same.
        run = Run()
        run.evaluate("eval-start-indist-e2e", 0, clustered(4, 2, set()))
        run.train()
        run.evaluate("eval-end-indist-e2e", 1, clustered(4, 2, {0}))
        text = self.run_report(run.text())
        self.assertIn("Changes eval-start-indist-e2e -> eval-end-indist-e2e", text)
        self.assertIn(": .000 -> .250, change +0.250", self.change_line(text, "e2e in-dist Exec"))
        # --compare names stages by a prefix of their phases' names.
        text = self.run_report(run.text(), "--compare", "eval-end,eval-start")
        self.assertIn("change -0.250", self.change_line(text, "e2e in-dist Exec"))

    def test_task_files_come_from_the_runs_curriculum(self):
        data = os.path.join(self.dir.name, "data")
        os.mkdir(data)
        self.task_file(os.path.join("data", "heldout_e2e.json"), ["t0-0", "t0-1", "t1-0"])
        self.task_file(os.path.join("data", "rl_e2e.json"), ["t5-0"])
        curriculum = os.path.join(self.dir.name, "cur.yaml")
        with open(curriculum, "w") as f:
            f.write("phases:\n  - {name: eval-a, type: eval, task_files: [data/heldout_e2e.json]}\n"
                    "  - name: e2e\n    task_files:\n      - data/rl_e2e.json\n")
        run = Run()
        run.lines.append(record("run", runId="r", configYaml="run:\n  id: r\ncurriculum_file: %s\n"
                                % curriculum))
        run.evaluate("eval-a", 1, {"t0-0": [False], "t0-1": [True], "t1-0": [True]})
        text = self.run_report(run.text())
        self.assertIn("op keys of 4 tasks from", text)
        self.assertIn("| eval-a | 1 | - | - | - | - | - | .667 [", text)  # the OOD e2e column
        self.assertIn("(3 tasks, 2 keys)", text)

    def test_failures_are_counted_by_class_and_check(self):
        run = Run()
        run.evaluate("eval-sft-e2e", 1, {"a": [False], "b": [False], "c": [False]},
                     failure="syntaxError")
        run.train()
        run.evaluate("eval-e2e-e2e", 2, {"a": [True], "b": [False], "c": [False]},
                     failure="syntaxError")
        text = self.run_report(run.text())
        self.assertIn("| eval-sft-e2e | syntaxError 3 | kernel-not-launched 3 |", text)
        self.assertIn("| eval-e2e-e2e | syntaxError 2, correct 1 | kernel-not-launched 2 |", text)
        # The learner's own table, phases in the order they ran.
        self.assertLess(text.index("| eval-sft-e2e | 0.00"), text.index("| eval-e2e-e2e | 0.33"))


if __name__ == "__main__":
    unittest.main()
