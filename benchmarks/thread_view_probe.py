"""What numbax's thread runtime sees on this host: /proc/loadavg, the other processes'
runnable threads and the free cores it derives, then one 2048x512 elementwise kernel's time
with the runtime's thread choice, with 16 threads forced and with one. No asserts.

    PYTHONPATH=. python benchmarks/thread_view_probe.py
"""
import argparse
import os
import time

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu.runtime import threads


def main() -> None:
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print("affinity", len(os.sched_getaffinity(0)), "cpu_count", os.cpu_count())
    for _ in range(5):
        print("loadavg", open("/proc/loadavg").read().strip(), "others", threads._others_running(),
              "free", threads.free_cores())
        time.sleep(0.3)
    x = np.random.default_rng(0).normal(size=(2048, 512)).astype(np.float32)
    f = numbax.jit(lambda v: jnp.tanh(v * 1.5 + 0.25) * v)
    for label, fixed in (("runtime's choice", None), ("16 threads", 16), ("1 thread", 1)):
        if fixed:
            numbax.config.update("cpu_threads", fixed)
        for _ in range(30):
            f(x)
        t = []
        for _ in range(200):
            t0 = time.perf_counter()
            f(x)
            t.append(time.perf_counter() - t0)
        print(f"{label:18s} median {np.median(t) * 1e6:8.1f} us  min {min(t) * 1e6:8.1f} us  "
              f"free {threads.free_cores()}")
    numbax.config.update("cpu_threads", 0)


if __name__ == "__main__":
    main()
