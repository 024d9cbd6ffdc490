"""How a large jitted reduction scales with the threads and chunks it is given (issue 19's
16-core rows: sum and logsumexp of 1e7 float32 at 1.27-1.31x jax.jit). Times numbax with the
thread rule's own choice and with fixed counts, each with 1, 2, 4 and 8 chunks a thread;
then np.sum and, when installed, jax.jit in the same process. Medians of 41 calls.

    python benchmarks/reduction_threads.py [size]
"""
import argparse
import os
import statistics
import time

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu.runtime import threads


def median_us(f, *args, reps=41):
    f(*args)
    f(*args)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        r = f(*args)
        getattr(r, "block_until_ready", lambda: None)()
        ts.append(time.perf_counter() - t)
    return 1e6 * statistics.median(ts)


def _chunks_per_thread(per):
    """threads.chunks with `per` chunks a thread instead of two."""
    return lambda size, minimum, n: max(1, min(per * n, size // minimum))


def logsumexp(xp):
    def f(v):
        m = xp.max(v)
        return m + xp.log(xp.sum(xp.exp(v - m)))
    return f


def size(text: str) -> int:
    """An element count, also written as a float (1e7)."""
    return int(float(text))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("size", nargs="?", type=size, default=10_000_000,
                        help="float32 elements (default 1e7)")
    n = parser.parse_args().size
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    print(f"reduction_threads | {time.strftime('%Y-%m-%d %H:%M')} | {threads.CORES} cores | "
          f"numba threads {threads.pool_size()} | n={n}")
    programs = {"sum": numbax.jit(jnp.sum), "logsumexp": numbax.jit(logsumexp(jnp))}
    original = threads.chunks
    for name, f in programs.items():
        for count in (None, 4, 8, 12, threads.pool_size()):
            row = []
            for per in (1, 2, 4, 8):
                threads.chunks = _chunks_per_thread(per)
                numbax.config.update("cpu_threads", count or 0)
                row.append(f"{per}/thread {median_us(f, x):7.1f}")
            print(f"{name:9s} threads {str(count or 'auto'):4s}  " + "  ".join(row) + " us")
        threads.chunks = original
        numbax.config.update("cpu_threads", 0)
    print(f"np.sum    {median_us(np.sum, x):7.1f} us")
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jxn
        xj = jax.device_put(x)
        print(f"jax sum   {median_us(jax.jit(jxn.sum), xj):7.1f} us   logsumexp "
              f"{median_us(jax.jit(logsumexp(jxn)), xj):7.1f} us")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
