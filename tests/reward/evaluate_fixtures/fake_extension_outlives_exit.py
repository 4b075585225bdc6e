# Test double for a compiled extension that leaves work running in the candidate's process: a
# thread, started when the module loads, that never ends (so the process outlives the runner's
# exit) and says it is alive on stderr, with the system's monotonic clock, every 20 ms. Work the
# candidate leaves behind could load the device while the reference is timed: the reference must
# be timed only once every process of the runner is gone.
import sys
import threading
import time


def tick():
    while True:
        sys.stderr.write("candidate alive at %.6f\n" % time.monotonic())
        sys.stderr.flush()
        time.sleep(0.02)


threading.Thread(target=tick, daemon=False).start()


def fused(x, scale, bias, idx):
    return x * scale + bias, idx.sum()
