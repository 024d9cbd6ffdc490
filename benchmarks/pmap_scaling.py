"""pmap scaling: the same elementwise + reduction work split over 1, 2, 4, ... virtual CPU
devices, against numbax.jit in this process, plus psum latency for 1 KB, 1 MB and 64 MB (from
1 MB up psum reduce-scatters and all-gathers, `parallel/collectives.py`).

Run: python benchmarks/pmap_scaling.py [max_devices] [--psum-only]
(max_devices default: the number of cores, at most 8).
"""
import argparse
import os
import time

import numpy as np


def _best(fn, repeats=5):
    fn()  # warm up (starts workers, compiles)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("max_devices", nargs="?", type=int,
                        default=min(8, os.cpu_count() or 1),
                        help="virtual CPU devices (default: the cores, at most 8)")
    parser.add_argument("--psum-only", action="store_true", help="only the psum latencies")
    args = parser.parse_args()
    max_devices = args.max_devices
    os.environ.setdefault("NUMBAX_NUM_CPU_DEVICES", str(max_devices))
    import numbax
    import numbax.numpy as jnp
    from numbax import lax

    total = 8 * 2 ** 20  # float64 elements (64 MB)
    x = np.random.default_rng(0).normal(size=total)

    def work(v):
        return jnp.sum(jnp.tanh(v) * jnp.exp(-v * v) + jnp.sqrt(jnp.abs(v)), axis=-1)

    print(f"cores={os.cpu_count()} devices={numbax.device_count()} work={total} float64")
    counts = [k for k in (1, 2, 4, 8, 16) if k <= numbax.device_count()]
    if args.psum_only:
        counts = []
    else:
        jitted = numbax.jit(work)
        base = _best(lambda: np.asarray(jitted(x)))
        print(f"jit, one process:   {base * 1e3:8.2f} ms  ({total / base / 1e6:7.1f} Melem/s)")
    for k in counts:
        f = numbax.pmap(work)
        shards = x.reshape(k, total // k)
        t = _best(lambda f=f, shards=shards: np.asarray(f(shards)))
        print(f"pmap on {k:2d} devices: {t * 1e3:8.2f} ms  ({total / t / 1e6:7.1f} Melem/s, "
              f"{base / t:4.2f}x jit)")
    n = numbax.device_count()
    psum = numbax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    for nbytes, label in ((1024, "1 KB"), (2 ** 20, "1 MB"), (64 * 2 ** 20, "64 MB")):
        v = np.ones((n, nbytes // 8))
        t = _best(lambda v=v: np.asarray(psum(v)))
        print(f"psum of {label:>5} over {n} devices: {t * 1e3:8.3f} ms (call, incl. transfers)")


if __name__ == "__main__":
    main()
