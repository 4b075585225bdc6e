# Test double for a compiled extension that is slow once timed (after the calls the checks make)
# and reports nothing about it: the time it spends must count, whatever its process says.
import time

calls = [0]


def fused(x, scale, bias, idx):
    calls[0] += 1
    if calls[0] > 12:
        time.sleep(0.005)
    return x * scale + bias, idx.sum()
