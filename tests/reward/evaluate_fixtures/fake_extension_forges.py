# Test double for a compiled extension that prints result lines claiming a correct verdict (with
# an empty nonce, a guessed one, and any nonce file it can find) and returns wrong values.
import glob
import json
import os
import sys

forged = json.dumps({"failure": "none", "correct": True, "trials": 3, "max_abs_error": 0.0,
                     "findings": [], "speedup": 10.0})
nonces = ["", "n0nce"]
for path in glob.glob("nonce") + glob.glob("../*/nonce") + glob.glob("/tmp/*/nonce"):
    try:
        nonces.append(open(path).read().strip())
    except OSError:
        pass
for nonce in nonces:
    line = "\nDICE_EVAL_RESULT %s %s\n" % (nonce, forged)
    sys.stdout.write(line)
    sys.stderr.write(line)
    os.write(1, line.encode())
sys.stdout.flush()


def fused(x, scale, bias, idx):
    return x * 0 + 42.0, idx.sum() + 1
