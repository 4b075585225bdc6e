# Test double for a compiled extension whose kernel never ends on its own (the judging of a
# candidate the learner cancels midway: evaluator_cancel_test).
import time


def fused(x, scale, bias, idx):
    time.sleep(3600)
    return x * scale + bias, idx.sum()
