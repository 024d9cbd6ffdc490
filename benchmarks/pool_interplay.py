"""Two thread pools in one process: a jitted product (128 x 784 @ 784 x 512, an MLP layer) right
after a user's threaded np.dot (1000^2 float32), a np.dot (300^2) right after a jitted call, and
a jitted solve (1000^2 float64: LAPACK, on BLAS's threads unless numbax's pool may still spin)
right after a jitted product, each against the same call after every pool has gone to sleep.
Medians in us.

    python benchmarks/pool_interplay.py [--jax]

Each pool's idle workers spin for a while after a call (libgomp's after numbax's kernels,
OpenBLAS's after numpy's products, Eigen's after jax.jit's); a call of the other pool inside that
window shares the cores with them (runtime/pool_spin.py). `--jax` times jax.jit in numbax's
place (JAX_PLATFORMS=cpu). NUMBAX_BOUND_POOL_SPIN=0 shows numbax with both libraries' defaults.
"""
import argparse
import time

import numpy as np

# parsed at the top: the library is chosen before the programs below are jitted (this script
# is run, never imported)
parser = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--jax", action="store_true", help="time jax.jit in numbax's place")
USE_JAX = parser.parse_args().jax
if USE_JAX:
    import os

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax as lib
else:
    import numbax as lib

ASLEEP_S = 0.3  # longer than any pool's spin (OpenBLAS's default: 2^28 cycles, ~0.13 s)
GAPS_S = (0.0, 0.001, 0.02)
REPEATS = 9

rng = np.random.default_rng(0)
x = rng.standard_normal((128, 784), dtype=np.float32)
w = rng.standard_normal((784, 512), dtype=np.float32)
big = rng.standard_normal((1000, 1000), dtype=np.float32)
small = rng.standard_normal((300, 300), dtype=np.float32)
system = rng.standard_normal((1000, 1000)) + 1000 * np.eye(1000)
rhs = rng.standard_normal((1000, 8))
layer = lib.jit(lambda a, b: a @ b)
solve = lib.jit(lambda a, b: lib.numpy.linalg.solve(a, b))


def jitted():
    out = layer(x, w)
    getattr(out, "block_until_ready", lambda: None)()


def solved():
    solve(system, rhs).block_until_ready()


def median_us(before, timed, gap: float) -> float:
    times = []
    for _ in range(REPEATS):
        time.sleep(ASLEEP_S)
        before()
        if gap:
            time.sleep(gap)
        start = time.perf_counter()
        timed()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e6


def main():
    for i in range(100):
        jitted()
        np.dot(small, small)
        if i % 5 == 0:  # (numbax: past the solve's kernels' tier, threads.PARALLEL_TIER_NS)
            solved()
    name = "jax.jit" if USE_JAX else "numbax"
    rows = [
        (f"{name} product after the same product", jitted, jitted),
        (f"{name} product after np.dot 1000^2", lambda: np.dot(big, big), jitted),
        ("np.dot 300^2 after np.dot 300^2", lambda: np.dot(small, small),
         lambda: np.dot(small, small)),
        (f"np.dot 300^2 after a {name} product", jitted, lambda: np.dot(small, small)),
        (f"{name} solve 1000^2 after a {name} product", jitted, solved),
    ]
    print(f"{'':46s}" + "".join(f"gap {g * 1e3:g} ms".rjust(14) for g in GAPS_S))
    for label, before, timed in rows:
        cells = "".join(f"{median_us(before, timed, g):14.0f}" for g in GAPS_S)
        print(f"{label:46s}{cells}", flush=True)


if __name__ == "__main__":
    main()
