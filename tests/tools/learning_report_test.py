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
import contextlib
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

    def __init__(self, run_id=None):
        self.lines, self.step, self.tasks = [], 0, set()
        if run_id:
            self.lines.append(record("run", runId=run_id, configYaml="run:\n  id: %s\n" % run_id))

    def train(self, phase="e2e", **readouts):
        """readouts: the step record's exploration and update fields (groupsJudged ...)."""
        self.lines.append(record("step", step=str(self.step), phaseName=phase, **readouts))
        self.step += 1

    def evaluate(self, phase, version, results, kind="e2e", texts=None, failure="staticCheck"):
        """results: {task: [correct of sample 0, 1, ...]}; texts: {task: first answer}."""
        step = str(self.step)
        self.lines.append(record("step", step=step, phaseName=phase, evaluation=True,
                                 policyVersion=str(version)))
        # exec: the mean over tasks of each task's share of correct samples (tasks/eval_table.h)
        shares = [sum(samples) / len(samples) for samples in results.values()]
        self.lines.append(record("metric", name="eval/%s/exec" % phase, step=step,
                                 value=sum(shares) / len(shares)))
        self.lines.append(record("metric", name="eval/%s/tasks" % phase, step=step,
                                 value=len(shares)))
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
        return self.printed("--export", path, *args)

    def printed(self, *args):
        """What the report prints for these arguments."""
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(self.report.main(list(args)), 0)
        return out.getvalue()

    def export(self, name, run):
        path = os.path.join(self.dir.name, name + ".jsonl")
        with open(path, "w") as f:
            f.write(run.text())
        return path

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
        # pass@1 is (3 + 4 + 0 + 1) / 16, not the first samples' 1 of 4.
        stage = [l for l in text.splitlines() if l.startswith("| eval-sft-pool-e2e |")][0]
        self.assertIn("| .500 [", stage)
        self.assertIn("(4 tasks, 2 keys)", stage)
        self.assertIn("| t0-0 | k0 | 3/4 .750 [.301, .954] | 3/4 .750 [.301, .954] |", text)
        self.assertIn("| t1-0 | k1 | 0/4 .000 [.000, .490] | 2/4 .500 [.150, .850] |", text)
        line = self.change_line(text, "e2e pool pass@1")
        self.assertIn(".500 -> .625, change +0.125", line)
        self.assertIn("sampled, its draws' noise inside the interval (floor 0)", line)

    def test_a_sampled_in_distribution_split_is_pass_at_1_over_its_draws(self):
        run = Run()
        held_out = {"t0-0": [False, True], "t0-1": [False, False], "t1-0": [True, True],
                    "t1-1": [False, True]}
        run.evaluate("eval-sft-indist-e2e", 1, held_out)
        run.train()
        run.evaluate("eval-e2e-indist-e2e", 2, dict(held_out, **{"t0-1": [True, True]}))
        tasks = self.task_file("heldout_indist_e2e.json", list(held_out))
        line = self.change_line(self.run_report(run.text(), "--tasks", tasks),
                                "e2e in-dist pass@1 (sampled)")
        self.assertIn(".500 -> .750, change +0.250", line)
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

    def experiment(self):
        """tools/learning-experiment's runs in one reward log, each exported on its own: the SFT
        run (its evaluations after SFT: a sampled pool, in-distribution and out-of-distribution
        held-out, in-distribution again), then from its checkpoint (version 0 again) an RL arm
        that passes 8 more of the 12 in-distribution keys and a control that judges the
        checkpoint again with the SFT evaluation's very answers. Phase names differ between the
        runs."""
        pool = {"p%d-0" % k: [k < 2] * 4 for k in range(4)}
        sft = Run("exp-sft")
        sft.train("sft")
        sft.evaluate("eval-sft-pool-e2e", 1, pool)
        sft.evaluate("eval-sft-indist-e2e", 1, clustered(12, 4, {0, 1}))
        sft.evaluate("eval-sft-ood-e2e", 1, {"o0": [False], "o1": [True]})
        # The repeat flips one key (4 of 48 answers): the floor.
        sft.evaluate("eval-sft-repeat-indist-e2e", 1, clustered(12, 4, {0, 1, 2}))
        arm = Run("exp-rl-1")
        for mixed in (1, 3):
            arm.train("e2e", groupsJudged=4, groupsMixed=mixed, distinctTexts=12, groupSize=16,
                      klDivergence=0.001, clipFraction=0.02, gradNorm=0.5)
        arm.evaluate("eval-e2e-pool-e2e", 2, dict(pool, **{"p2-0": [True, True, False, False]}))
        arm.evaluate("eval-e2e-indist-e2e", 2, clustered(12, 4, set(range(10))))
        arm.evaluate("eval-e2e-ood-e2e", 2, {"o0": [False], "o1": [True]})
        control = Run("exp-control")
        control.evaluate("eval-e2e-pool-e2e", 0, pool)
        control.evaluate("eval-e2e-indist-e2e", 0, clustered(12, 4, {0, 1}))
        control.evaluate("eval-e2e-ood-e2e", 0, {"o0": [False], "o1": [True]})
        tasks = [self.task_file("rl_e2e.json", list(pool), key=lambda t: t.split("-")[0]),
                 self.task_file("heldout_indist_e2e.json", list(clustered(12, 4, set()))),
                 self.task_file("heldout_e2e.json", ["o0", "o1"], key=lambda t: t)]
        return ([self.export(n, r) for n, r in (("sft", sft), ("arm", arm), ("control", control))],
                ["--tasks"] + tasks)

    def test_an_arm_is_compared_with_the_baseline_runs_stage_and_its_floor(self):
        (sft, arm, _), tasks = self.experiment()
        # Alone, the arm has one stage and nothing to compare it with.
        self.assertIn("(no two stages to compare)", self.printed("--export", arm, *tasks))
        text = self.printed("--export", arm, "--baseline-export", sft, *tasks)
        self.assertIn("Changes run exp-sft, stage eval-sft -> run exp-rl-1, stage eval-e2e (", text)
        line = self.change_line(text, "e2e in-dist Exec")
        # BEFORE is the SFT evaluation (2 keys of 12), not its repeat (3) nor the arm's own.
        self.assertIn(": .167 -> .833, change +0.667", line)
        self.assertIn("48 tasks, 12 keys", line)
        self.assertIn("32 of 48 first answers changed", line)
        self.assertIn("(repeat at run exp-sft, stage eval-sft: +0.083", line)
        self.assertIn("4 of 48 answers changed", line)
        self.assertGreater(float(line.split("; floor ")[1].split(" ")[0]), 0.083)
        self.assertTrue(line.endswith(": beyond the noise floor (a gain)"), line)
        # The pool (matched by split, its phase named otherwise) and OOD, which had no repeat.
        line = self.change_line(text, "e2e pool pass@1")
        self.assertIn(".500 -> .625, change +0.125", line)
        self.assertIn("; 4 tasks, 4 keys)", line)
        self.assertIn("sampled, its draws' noise inside the interval (floor 0)", line)
        self.assertIn("floor not measured", self.change_line(text, "e2e OOD Exec"))
        # The rest of the report is the arm's: its stage table, its learner's table.
        self.assertIn("| eval-e2e | 2 |", text)
        self.assertNotIn("| eval-sft", text)

    def test_the_stage_plot_has_each_stages_splits_with_their_intervals(self):
        (sft, arm, _), tasks = self.experiment()
        svg = os.path.join(self.dir.name, "stages.svg")
        self.printed("--export", arm, "--baseline-export", sft, "--stage-plot", svg, *tasks)
        import xml.etree.ElementTree as ET
        root = ET.parse(svg).getroot()
        points = {(c.get("data-run"), c.get("data-stage"), c.get("data-series")): c
                  for c in root.iter("{http://www.w3.org/2000/svg}circle")
                  if c.get("data-series")}
        # The baseline's stage first (its repeat is the floor's, not a point), then the arm's.
        self.assertEqual(sorted(points), sorted(
            (run, stage, series) for run, stage in (("exp-sft", "eval-sft"),
                                                    ("exp-rl-1", "eval-e2e"))
            for series in ("pool e2e", "indist e2e", "ood e2e")))
        for (run, stage, series), want in {("exp-sft", "eval-sft", "indist e2e"): 2 / 12,
                                           ("exp-rl-1", "eval-e2e", "indist e2e"): 10 / 12,
                                           ("exp-rl-1", "eval-e2e", "pool e2e"): 0.625}.items():
            c = points[(run, stage, series)]
            mean, lo, hi = (float(c.get(k)) for k in ("data-mean", "data-lo", "data-hi"))
            self.assertAlmostEqual(mean, want, places=3)
            self.assertLess(lo, mean)
            self.assertLess(mean, hi)
        # Higher is up: the arm's in-distribution point sits above the baseline's.
        self.assertLess(float(points[("exp-rl-1", "eval-e2e", "indist e2e")].get("cy")),
                        float(points[("exp-sft", "eval-sft", "indist e2e")].get("cy")))

    def test_a_control_with_the_baselines_answers_is_within_the_floor(self):
        (sft, _, control), tasks = self.experiment()
        text = self.printed("--export", control, "--baseline-export", sft, *tasks)
        self.assertIn("Changes run exp-sft, stage eval-sft -> run exp-control, stage eval-e2e (",
                      text)
        line = self.change_line(text, "e2e in-dist Exec")
        self.assertIn(": .167 -> .167, change +0.000", line)
        self.assertIn("0 of 48 first answers changed", line)
        self.assertIn("repeat at run exp-sft, stage eval-sft", line)
        self.assertTrue(line.endswith(": within the noise floor"), line)
        # --compare's BEFORE names a stage of the baseline.
        text = self.printed("--export", control, "--baseline-export", sft, "--compare",
                           "eval-sft-ood,", *tasks)
        self.assertIn("Changes run exp-sft, stage eval-sft -> run exp-control", text)

    def test_brief_prints_a_block_per_run_with_its_rl_readouts(self):
        (sft, arm, control), tasks = self.experiment()
        text = self.printed("--export", arm, "--baseline-export", sft, "--brief", *tasks)
        lines = text.splitlines()
        self.assertEqual(lines[0], "exp-rl-1: exp-sft/eval-sft -> exp-rl-1/eval-e2e")
        self.assertEqual(len(lines), 5, text)
        self.assertRegex(lines[1], r"^  e2e pool pass@1   \.500 -> \.625  \+0\.125 \[.*\]  "
                                   r"floor 0 \(sampled\): ")
        self.assertRegex(lines[2], r"^  e2e in-dist Exec  \.167 -> \.833  \+0\.667 \[.*\]  "
                                   r"floor \.\d+: beyond the noise floor \(a gain\); "
                                   r"32 of 48 answers changed$")
        self.assertRegex(lines[3], r"^  e2e OOD Exec      \.500 -> \.500  \+0\.000 .* no floor: "
                                   r"interval includes 0; 0 of 2 answers changed$")
        self.assertEqual(lines[4], "  RL e2e: 2 steps, mixed groups 4 of 8 (50%), distinct texts "
                                   "3.0 per group of 16, KL 0.001, clip fraction 0.020, "
                                   "grad norm 0.5")
        text = self.printed("--export", control, "--baseline-export", sft, "--brief", *tasks)
        self.assertIn("  e2e in-dist Exec  .167 -> .167  +0.000", text)
        self.assertIn(": within the noise floor; 0 of 48 answers changed\n", text)
        self.assertTrue(text.endswith("  no RL step (no group judged)\n"), text)

    def test_the_baseline_is_read_from_the_reward_log_by_run_id(self):
        # A stand-in for dice-log: `export LOG RUN` prints LOG/RUN.jsonl.
        (sft, arm, _), tasks = self.experiment()
        log = os.path.join(self.dir.name, "log")
        os.mkdir(log)
        for path, run in ((sft, "s"), (arm, "a")):
            with open(path) as f, open(os.path.join(log, run + ".jsonl"), "w") as out:
                out.write("".join(l for l in f if '"kind": "run"' not in l))
        fake = os.path.join(self.dir.name, "dice-log")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\n[ "$1" = export ] && exec cat "$2/$3.jsonl"\nexit 1\n')
        os.chmod(fake, 0o755)
        text = self.printed("--db", log, "--run", "a", "--baseline", "s", "--dice-log", fake,
                           *tasks)
        self.assertIn("Changes run s, stage eval-sft -> run a, stage eval-e2e (", text)
        with self.assertRaises(SystemExit):
            with redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                self.report.main(["--export", arm, "--baseline", "s"])

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
