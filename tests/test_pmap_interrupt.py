"""Ctrl-C in the caller of a running pmap stops the worker processes."""
import os
import signal
import subprocess
import sys
import textwrap
import time

# The script installs Python's Ctrl-C handler itself: Python leaves SIGINT ignored in a process
# started with it ignored, as a non-interactive shell starts its background jobs (a test run
# launched with `&` saw no KeyboardInterrupt, and its workers spun on); a terminal's Python
# has the handler.
SCRIPT = textwrap.dedent("""
    import os, signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ["NUMBAX_NUM_CPU_DEVICES"] = "2"
    import numpy as np
    import numbax
    from numbax import lax
    from numbax._src.parallel import pool

    def slow(x):  # an eager while_loop in the workers that never ends
        return lax.while_loop(lambda c: c[1] > -1.0, lambda c: (c[0] + 1, c[1] + 1.0),
                              (0, x))[1]

    f = numbax.pmap(numbax.jit(lambda x: x + 1))
    f(np.ones(2))  # the pool is up
    procs = [w.proc for w in pool._POOL.workers]
    print("ready", flush=True)
    try:
        with numbax.disable_jit():
            numbax.pmap(slow)(np.ones(2))
        print("finished?!", flush=True)
    except KeyboardInterrupt:
        for p in procs:
            p.wait(timeout=5)
        print("alive", sum(p.poll() is None for p in procs), flush=True)
""")


def test_ctrl_c_stops_the_workers():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # the workers are inside the slow loop now
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "alive 0" in out, (out, err[-2000:])
