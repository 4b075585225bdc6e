"""tools/learning-experiment --dry-run: the curriculum pieces it cuts and every arm's overrides,
checked by the real dice-config and dice-cluster (up --dry-run). Arms run side by side on one
machine, so each needs its own reward log (RocksDB lets one process write a log), cluster state
folder and ports, and all start from the one SFT checkpoint; a run on the GPU lost both arms when
they shared the state folder."""

import os
import subprocess
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tools", "learning-experiment")
BUILD = os.environ.get("DICE_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
PER_ARM = ("run.id", "run.reward_log_path", "cluster.local.state_dir", "cluster.learner.port",
           "cluster.learner.metrics_port", "cluster.worker_metrics.rollout_base_port",
           "cluster.worker_metrics.reward_base_port")


def dry_run(work, *args):
    env = dict(os.environ, DICE_BUILD_DIR=BUILD, DICE_PYTHON="/usr/bin/python3")
    return subprocess.run([SCRIPT, "--dry-run", "--work", work, *args], env=env,
                          capture_output=True, text=True, timeout=120)


def arms_of(stdout):
    """{arm: {key: value}} from the "arm NAME" blocks of --dry-run's output."""
    arms, current = {}, None
    for line in stdout.splitlines():
        if line.startswith("arm "):
            current = arms.setdefault(line[4:], {})
        elif line.startswith("  ") and current is not None:
            key, _, value = line.strip().partition("=")
            current[key] = value
    return arms


class LearningExperimentDryRunTest(unittest.TestCase):
    def test_arms_side_by_side_share_nothing_but_the_start(self):
        with tempfile.TemporaryDirectory() as work:
            done = dry_run(work, "--seeds", "1,2", "--rl-lr", "3e-5", "--rl-steps", "5")
            self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
            arms = arms_of(done.stdout)
            self.assertEqual(sorted(arms), ["control", "rl-1", "rl-2"])
            for key in PER_ARM:
                values = [arm[key] for arm in arms.values()]
                self.assertEqual(len(set(values)), len(values), "%s shared: %s" % (key, values))
            starts = {arm["learner.init_checkpoint"] for arm in arms.values()}
            self.assertEqual(len(starts), 1, starts)
            self.assertTrue(starts.pop().endswith("-sft/phase-sft"))
            self.assertEqual(arms["control"]["curriculum_file"].rsplit("/", 1)[1], "control.yaml")
            self.assertNotIn("learner.optimizer.lr", arms["control"])
            for name in ("rl-1", "rl-2"):
                self.assertEqual(arms[name]["learner.optimizer.lr"], "3e-5")
                self.assertEqual(arms[name]["learner.seed"], name[3:])
                with open(arms[name]["curriculum_file"]) as f:
                    rl_piece = yaml.safe_load(f)
                rl_phases = [ph for ph in rl_piece["phases"] if ph.get("type", "rl") == "rl"]
                self.assertTrue(rl_phases)
                self.assertTrue(all(ph["steps"] == 5 for ph in rl_phases))

    def test_arms_side_by_side_divide_the_reward_side(self):
        # configs/tiny.yaml sizes one run for the machine: 8 slots, 14 compile jobs. Three arms
        # with that each ran a learner out of GPU memory; one after another, each has it all.
        with tempfile.TemporaryDirectory() as work:
            done = dry_run(work, "--seeds", "1,2")
            self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
            for arm in arms_of(done.stdout).values():
                self.assertEqual(arm["reward.gpu_slots"], "3")
                self.assertEqual(arm["reward.compile_jobs"], "5")
            done = dry_run(work, "--seeds", "1", "reward.gpu_slots=6")
            self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
            for arm in arms_of(done.stdout).values():
                self.assertEqual(arm["reward.gpu_slots"], "3")
                self.assertEqual(arm["reward.compile_jobs"], "7")
            done = dry_run(work, "--seeds", "1", "--serial", "reward.gpu_slots=6")
            self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
            for arm in arms_of(done.stdout).values():
                self.assertEqual(arm["reward.gpu_slots"], "6")
                self.assertEqual(arm["reward.compile_jobs"], "14")

    def test_in_distribution_evaluations_can_be_sampled_like_the_pool(self):
        with tempfile.TemporaryDirectory() as work:
            done = dry_run(work, "--seeds", "1", "--indist-samples", "4", "--pool-samples", "6")
            self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
            arms = arms_of(done.stdout)
            for arm in ("control", "rl-1"):
                with open(arms[arm]["curriculum_file"]) as f:
                    evals = [ph for ph in yaml.safe_load(f)["phases"] if ph.get("type") == "eval"]
                pool = [ph for ph in evals if "-pool-" in ph["name"]]
                indist = [ph for ph in evals if "-indist-" in ph["name"]]
                self.assertTrue(pool and indist, [ph["name"] for ph in evals])
                self.assertFalse([ph for ph in indist if "-repeat-" in ph["name"]])
                for ph in indist:
                    self.assertEqual(ph["decoding"], "sample")
                    self.assertEqual(ph["samples_per_task"], 4)
                    self.assertEqual(ph["sampling"], pool[0]["sampling"])
                    self.assertFalse(ph["timing"])
                self.assertTrue(all(ph["samples_per_task"] == 6 for ph in pool))
                # Out of distribution stays greedy, with its repeat after SFT.
                ood = [ph for ph in evals if "-ood-" in ph["name"]]
                self.assertTrue(ood and all(ph.get("decoding", "greedy") != "sample" for ph in ood))
            done = dry_run(work, "--indist-samples", "0")
            self.assertEqual(done.returncode, 2)
            self.assertIn("--indist-samples", done.stderr)

    def test_rl_phases_can_take_another_scheduling_and_the_pass_rate_band(self):
        with tempfile.TemporaryDirectory() as work:
            done = dry_run(work, "--seeds", "1", "--rl-phases", "e2e", "--rl-scheduling", "mixed",
                           "--rl-band")
            self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
            with open(arms_of(done.stdout)["rl-1"]["curriculum_file"]) as f:
                phases = yaml.safe_load(f)["phases"]
            rl = [ph for ph in phases if ph.get("type", "rl") == "rl"]
            self.assertTrue(rl)
            for ph in rl:
                self.assertEqual(ph["scheduling"], "mixed")
                self.assertEqual(ph["pass_rate_band"], {})
            for ph in phases:
                if ph.get("type") == "eval":
                    self.assertNotIn("pass_rate_band", ph)
            # The arm evaluates the pool first, which primes its band (the same weights).
            self.assertEqual(phases[0]["name"], "eval-start-pool-e2e")
            self.assertEqual(phases[0]["decoding"], "sample")
            self.assertEqual(phases[0]["task_files"], rl[0]["task_files"])
            done = dry_run(work, "--rl-scheduling", "random")
            self.assertEqual(done.returncode, 2)
            self.assertIn("--rl-scheduling", done.stderr)

    def test_the_checkpoint_folder_follows_an_override(self):
        with tempfile.TemporaryDirectory() as work:
            done = dry_run(work, "--seeds", "1", "learner.checkpoint.dir=%s/ck" % work)
            self.assertEqual(done.returncode, 0, done.stderr + done.stdout)
            start = arms_of(done.stdout)["rl-1"]["learner.init_checkpoint"]
            self.assertTrue(start.startswith(work + "/ck/"), start)

    def test_an_override_the_config_refuses_is_named(self):
        with tempfile.TemporaryDirectory() as work:
            done = dry_run(work, "--seeds", "1", "learner.no_such_key=1")
            self.assertEqual(done.returncode, 2)
            self.assertIn("no_such_key", done.stderr)


class LearningExperimentProgressTest(unittest.TestCase):
    """What the experiment prints every 30 s per arm running side by side (--progress LOG)."""

    def progress(self, log_text):
        with tempfile.TemporaryDirectory() as work:
            log = os.path.join(work, "rl-1.log")
            if log_text is not None:
                with open(log, "w") as f:
                    f.write(log_text)
            done = subprocess.run([SCRIPT, "--progress", log], capture_output=True, text=True,
                                  timeout=30)
            self.assertEqual(done.returncode, 0, done.stderr)
            return done.stdout.strip()

    def test_the_last_step_line_in_a_few_words(self):
        log = ('ts=a level=info msg="policy loaded for training" device=cuda:0\n'
               'ts=b level=info msg="step 1/12 of phase e2e" step=0 correct_rate=0.500 '
               'groups_judged=8 groups_mixed=5 seconds=99.0 eta_s=1200\n'
               'ts=c level=info msg="step 2/12 of phase e2e" step=1 correct_rate=0.570 '
               'groups_judged=8 groups_mixed=6 seconds=101.1 eta_s=1010\n'
               'ts=d level=info msg="weights pushed" policy_version=2\n')
        self.assertEqual(self.progress(log), "step 2/12 of phase e2e: correct 0.570, "
                         "mixed groups 6/8, 101.1 s a step, ETA 1010 s")

    def test_an_evaluation_after_the_steps_is_shown(self):
        log = ('ts=b msg="step 12/12 of phase e2e" correct_rate=0.6 groups_judged=8 '
               'groups_mixed=6 seconds=90 eta_s=0\n'
               'ts=c msg="evaluation of phase eval-e2e-pool-e2e: Exec 0.410 (48 tasks)"\n')
        self.assertEqual(self.progress(log), "evaluation of phase eval-e2e-pool-e2e: Exec 0.410 "
                         "(48 tasks)")

    def test_an_arm_without_a_log_yet_is_starting(self):
        self.assertEqual(self.progress(None), "starting")


if __name__ == "__main__":
    unittest.main()
