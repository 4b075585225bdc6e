# Test double for a compiled extension that looks for the judge's files where it runs and says
# what it found on stderr, then returns wrong values.
import os
import sys

found = []
found.append("reference.py here" if os.path.exists("reference.py") else "no reference.py here")
found.append("nonce here" if os.path.exists("nonce") else "no nonce here")
sys.stderr.write("; ".join(found) + "\n")


def fused(x, scale, bias, idx):
    return x * 0 + 42.0, idx.sum() + 1
