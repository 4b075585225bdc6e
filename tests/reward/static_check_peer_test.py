"""The peer row of docs/SECURITY.md: KernelBench's static checker and dice's static check
(reward/python/static_check.py) over the same files, dice's attack corpus and its honest files,
printed as one table: per attack class, how many files each rejects; then the honest files each
wrongly rejects.

KernelBench is never copied into this repository: the test reads its checker from a checkout
named by DICE_KERNELBENCH_DIR (CMake option of the same name; docs/BENCHMARKS.md says how to
get one) and exits 77, which ctest shows as skipped, when there is none.

KernelBench is read two ways: its defaults (validate_kernel_static(code, backend="cuda",
precision="fp32"): only its strict checks reject) and with its warnings counted as rejections.
dice rejects a file when its static check has a fatal finding. The module-imports check
(module_imports.py) reads built modules; the corpus holds sources only, so it is not a column
here: the GPU corpus's native attacks it refuses are listed in docs/SECURITY.md.

Files that are not candidates are left out: the references (reference*.py) and the CPU corpus's
extension doubles (adversarial/cpu/extensions/, Python stand-ins for built modules).
"""

import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reward", "python"))
import static_check  # noqa: E402

# Where the attack and honest files live, relative to this folder.
CORPUS_ROOTS = ("adversarial", "corpus", "gpu_hacks")
SKIP_EXIT_CODE = 77
# Where the checker sits in a KernelBench checkout (the repository root or its package folder).
CHECKER_PLACES = ("src/kernelbench/kernel_static_checker.py",
                  "kernelbench/kernel_static_checker.py", "kernel_static_checker.py")
HONEST = "honest"


def find_checker(root):
    for place in CHECKER_PLACES:
        path = os.path.join(root, place)
        if os.path.isfile(path):
            return path
    return None


def load_checker(path):
    """KernelBench's checker as a module, loaded from its file alone (it needs only re and
    typing; importing the kernelbench package would pull in torch)."""
    spec = importlib.util.spec_from_file_location("kernelbench_static_checker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def file_class(rel):
    """The row a corpus file counts in: HONEST, an attack class, or None (not a candidate)."""
    parts = rel.split(os.sep)
    name = parts[-1]
    if name.startswith("reference") or "extensions" in parts:
        return None
    if "control" in parts or "honest" in parts or name == "honest.py":
        return HONEST
    if parts[0] == "adversarial":  # adversarial/<cpu|gpu>/<class>/<file>
        return "adversarial %s (%s)" % (parts[2], parts[1])
    if parts[0] == "corpus":
        return "static cheats (corpus/%s)" % parts[1]
    return "run-time hacks (gpu_hacks)"


def corpus_files():
    """(path relative to this folder, row) for every .py file under the corpus roots."""
    files = []
    for root in CORPUS_ROOTS:
        for folder, _, names in os.walk(os.path.join(HERE, root)):
            for name in names:
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(folder, name), HERE)
                    files.append((rel, file_class(rel)))
    return sorted(files)


def dice_rejects(source):
    result = static_check.check(source)
    return any(f["fatal"] for f in result["findings"])


class Verdicts:
    """Each checker's answer for one file: rejected or not."""

    def __init__(self, kernelbench, source):
        valid, errors, warnings = kernelbench.validate_kernel_static(
            source, backend="cuda", precision="fp32")
        assert isinstance(valid, bool) and valid == (not errors), (valid, errors)
        self.kernelbench = not valid
        self.kernelbench_strict = bool(errors or warnings)
        self.dice = dice_rejects(source)


COLUMNS = (("KernelBench", "kernelbench"), ("KernelBench, warnings too", "kernelbench_strict"),
           ("dice static check", "dice"))


def table(rows):
    """rows: {class: [Verdicts]}; one markdown table, the honest row last."""
    head = "| class | files | " + " | ".join(c for c, _ in COLUMNS) + " |"
    lines = [head, "|---|---|" + "---|" * len(COLUMNS)]
    order = sorted(c for c in rows if c != HONEST) + [HONEST]
    for cls in order:
        verdicts = rows.get(cls, [])
        label = "honest, wrongly rejected" if cls == HONEST else cls
        counts = [str(sum(getattr(v, attr) for v in verdicts)) for _, attr in COLUMNS]
        lines.append("| %s | %d | %s |" % (label, len(verdicts), " | ".join(counts)))
    attacks = [v for c, vs in rows.items() if c != HONEST for v in vs]
    totals = [str(sum(getattr(v, attr) for v in attacks)) for _, attr in COLUMNS]
    lines.insert(len(lines) - 1, "| all attacks | %d | %s |" % (len(attacks), " | ".join(totals)))
    return "\n".join(lines)


class StaticCheckPeerTest(unittest.TestCase):
    checker = None

    def test_peer_table(self):
        files = corpus_files()
        rows = {}
        for rel, cls in files:
            if cls is None:
                continue
            with open(os.path.join(HERE, rel), encoding="utf-8") as f:
                verdicts = Verdicts(self.checker, f.read())
            rows.setdefault(cls, []).append((rel, verdicts))
        print("\nKernelBench's checker: %s" % self.checker.__file__)
        print(table({c: [v for _, v in vs] for c, vs in rows.items()}))
        for rel, v in rows.get(HONEST, []):
            if v.kernelbench or v.kernelbench_strict:
                print("KernelBench rejects honest %s (warnings too: %s)" %
                      (rel, v.kernelbench_strict and not v.kernelbench))

        # Every file is a candidate of a known row or one of the known non-candidates.
        self.assertGreaterEqual(len(rows.get(HONEST, [])), 5)
        self.assertGreaterEqual(sum(len(vs) for c, vs in rows.items() if c != HONEST), 50)
        # dice's own honest files pass its static check (a checker that rejects everything
        # would top every attack row).
        wrongly = [rel for rel, v in rows[HONEST] if v.dice]
        self.assertEqual(wrongly, [], "dice's static check rejects honest files")

    def test_rows_come_from_the_folders(self):
        self.assertEqual(file_class("adversarial/cpu/a_judge/forge_os_exit.py"),
                         "adversarial a_judge (cpu)")
        self.assertEqual(file_class("adversarial/gpu/control/honest.py"), HONEST)
        self.assertEqual(file_class("corpus/honest/dev_444.py"), HONEST)
        self.assertEqual(file_class("gpu_hacks/honest.py"), HONEST)
        self.assertEqual(file_class("gpu_hacks/zeros_output.py"), "run-time hacks (gpu_hacks)")
        self.assertIsNone(file_class("gpu_hacks/reference.py"))
        self.assertIsNone(file_class("adversarial/cpu/extensions/ext_wrong.py"))


def main():
    root = os.environ.get("DICE_KERNELBENCH_DIR", "")
    path = find_checker(root) if root else None
    if path is None:
        print("skipped: no KernelBench checkout (set DICE_KERNELBENCH_DIR, or the CMake option "
              "of that name, to a folder holding src/kernelbench/kernel_static_checker.py; "
              "docs/BENCHMARKS.md, 'Static checks against KernelBench's', says how to get one)."
              " DICE_KERNELBENCH_DIR=%r" % root)
        return SKIP_EXIT_CODE
    StaticCheckPeerTest.checker = load_checker(path)
    program = unittest.main(argv=[sys.argv[0], "-v"], exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
