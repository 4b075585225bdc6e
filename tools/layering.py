#!/usr/bin/env python3
"""tools/layering.py: the include rule of the layout (docs/ARCHITECTURE.md), run by tools/lint.

Folders below a service never include a service's headers, a service never includes another's,
the sandbox knows nothing of verdicts, and the learner's rooms (learner/CMakeLists.txt) include
only themselves and the rooms below them: never back up into the run loop. Each #include
"dir/..." of a project header is checked against the folders its file's folder may use; prints
every violation as file:line and exits 1 if there is any.

  python3 tools/layering.py [ROOT]      (default: the checkout this script is in)
"""

import os
import re
import subprocess
import sys

# The folders a service and everything above it may use.
LOWER = ["common", "options", "schemas", "tasks", "rewardlog", "net", "model"]
# Longest prefix first: reward/sandbox is stricter than reward.
ALLOWED = [
    ("reward/sandbox", ["common", "options", "reward/sandbox"]),
    ("common", ["common"]),
    ("options", ["common", "options", "schemas"]),
    ("schemas", ["schemas"]),
    ("tasks", ["common", "schemas", "tasks"]),
    ("rewardlog", ["common", "schemas", "rewardlog"]),
    ("net", ["common", "schemas", "options", "net"]),
    ("model", ["common", "schemas", "options", "model"]),
    # The learner's rooms, top to bottom: run uses them all; none includes a room above it.
    ("learner/run", LOWER + ["learner"]),
    ("learner/push", LOWER + ["learner/push", "learner/step", "learner/curriculum"]),
    ("learner/resume", LOWER + ["learner/resume", "learner/curriculum"]),
    ("learner/train", LOWER + ["learner/train", "learner/parallel", "learner/step",
                               "learner/curriculum"]),
    ("learner/parallel", LOWER + ["learner/parallel"]),
    ("learner/step", LOWER + ["learner/step", "learner/curriculum"]),
    ("learner/curriculum", LOWER + ["learner/curriculum"]),
    ("learner", LOWER + ["learner"]),
    ("rollout", LOWER + ["rollout"]),
    ("reward", LOWER + ["reward"]),
    ("cluster", LOWER + ["cluster"]),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rule_for(path):
    for folder, allowed in ALLOWED:
        if path == folder or path.startswith(folder + "/"):
            return folder, allowed
    return None, None  # tools/, tests/, cmake/: may use anything


def uses(include, allowed):
    return any(include == a or include.startswith(a + "/") for a in allowed)


def violations(root, files):
    found = []
    for path in files:
        folder, allowed = rule_for(path)
        if folder is None:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m or "/" not in m.group(1):
                    continue  # same-folder or system-style include
                include = m.group(1)
                top = include.split("/")[0]
                if not os.path.isdir(os.path.join(root, top)):
                    continue  # not a project folder (generated, third party)
                if not uses(include, allowed):
                    found.append("%s:%d: %s/ may not include \"%s\" (it may use: %s)" % (
                        path, number, folder, include, ", ".join(allowed)))
    return found


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    try:
        # Tracked and new (untracked, not ignored) files, as the working tree has them: a file
        # deleted but not yet committed is left out, one not yet added is checked.
        files = [f for f in subprocess.check_output(
            ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard",
             "*.h", "*.cc"], text=True).split() if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root)
                 for d, _, names in os.walk(root) if "/build" not in d
                 for f in names if f.endswith((".h", ".cc"))]
    found = violations(root, files)
    for v in found:
        print(v)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
