"""Per-call latency (p50/p99/max) of jitted selu 1e6, sum 1e7 and a small tanh map, on a quiet
machine and with N busy-looping processes (argv[1], default 2) beside it.

    python benchmarks/load_latency.py [N] [--jax]

`--jax` times jax.jit on the same functions instead (JAX_PLATFORMS=cpu), for the peer's
figures under the same load.
"""
import argparse
import subprocess
import sys
import time

import numpy as np

# parsed at the top: the library is chosen before the cases below are jitted (this script is
# run, never imported)
parser = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("spinners", nargs="?", type=int, default=2, metavar="N",
                    help="busy-looping processes (default 2)")
parser.add_argument("--jax", action="store_true", help="time jax.jit instead")
ARGS = parser.parse_args()
USE_JAX = ARGS.jax
if USE_JAX:
    import os

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax as lib
    import jax.numpy as jnp
else:
    import numbax as lib
    import numbax.numpy as jnp


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


rng = np.random.default_rng(0)
CASES = [
    ("selu 1e6", lib.jit(selu), rng.standard_normal(1_000_000).astype(np.float32), 300),
    ("sum 1e7", lib.jit(jnp.sum), rng.standard_normal(10_000_000).astype(np.float32), 60),
    ("tanh 2e4", lib.jit(lambda v: jnp.tanh(v) * 2 + 1), np.ones(20_000, np.float32), 2000),
]


def call(fn, arg):
    out = fn(arg)
    if USE_JAX:
        out.block_until_ready()


def latency(fn, arg, calls):
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call(fn, arg)
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1e3
    return f"p50 {np.median(ms):.3f} ms  p99 {np.percentile(ms, 99):.3f}  max {ms.max():.2f}"


def run(tag):
    for name, fn, arg, calls in CASES:
        print(f"{tag:6s} {name:9s} {latency(fn, arg, calls)}")


def main():
    spinners = ARGS.spinners
    for _, fn, arg, _ in CASES:
        for _ in range(5):
            call(fn, arg)
    run("quiet")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(spinners)]
    time.sleep(1.5)  # the runtime's load sample is smoothed over half-second reads
    try:
        run("busy")
    finally:
        for p in busy:
            p.kill()


if __name__ == "__main__":
    main()
