"""How numbax's GEMM scales with threads and its k block on this host: GFLOP/s per shape for
thread counts and KC values, np.dot alongside (no asserts).

    PYTHONPATH=. python benchmarks/gemm_threads_probe.py [--avx2] [--tile ROWS:BYTES] [KC ...]

Each KC runs in a child process with its own Numba cache (KC is a compile-time constant of
runtime/gemm.py, set in the child before anything compiles). `--avx2` gives the child a
Haswell-class Numba target (no AVX-512: the 6 x 16 ymm tile) on an AVX-512 host, to see
whether 512-bit FMAs on every core cost clock speed; `--tile 12:32` keeps the target and
swaps the register tile (12 rows of 32-byte vectors: ymm FMAs in AVX-512's 32 registers).
np.dot and, where installed, jax.jit (every core) close each row; the host's mean MHz while
each row ran follows.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SHAPES = [  # (name, m, k, n): the batch-2048 MLP step's products and square ones
    ("x@W1 b2048", 2048, 784, 512), ("h@W2 b2048", 2048, 512, 512),
    ("xT@d1 b2048", 784, 2048, 512), ("1000^2", 1000, 1000, 1000), ("2000^2", 2000, 2000, 2000),
]


def mean_mhz() -> float:
    """The mean of /proc/cpuinfo's per-core MHz (0 where the host does not say)."""
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
    except OSError:
        return 0.0
    return sum(mhz) / len(mhz) if mhz else 0.0


def timed_with_clock(fn) -> tuple[float, float]:
    """(best seconds, mean MHz sampled right after each call) of `fn`."""
    fn()
    times, clocks = [], []
    for _ in range(7):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        clocks.append(mean_mhz())
    return min(times), sum(clocks) / len(clocks)


def child(kc: int, tile: str | None) -> None:
    from numbax._src.compiler.cpu.runtime import gemm

    gemm.KC, gemm.K_TAIL_MERGED_BELOW, gemm.KC_MAX = kc, kc // 4, kc + kc // 4
    if tile:  # before anything compiles: the jitted parts read these globals when compiled
        gemm.MR, gemm.VEC_BYTES = (int(v) for v in tile.split(":"))
        gemm.register_tile = gemm.tile_kernel(gemm.MR, gemm.VEC_BYTES)
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, cores // 4, cores // 2, cores} - {0})
    rng = np.random.default_rng(0)
    try:
        import jax
        import jax.numpy as jjnp
        jax_dot = jax.jit(jjnp.dot)
    except ImportError:  # jax is a bench-only peer
        jax_dot = None
    print(f"KC={kc} tile {gemm.MR}x{2 * gemm.VEC_BYTES // 4}  threads: {counts}"
          f"  (GFLOP/s; np.dot, jax.jit last; MHz per column after)", flush=True)
    for name, m, k, n in SHAPES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        flops = 2.0 * m * n * k
        runs = [timed_with_clock(lambda t=t, a=a, b=b: gemm.matmul(a, b, t)) for t in counts]
        runs.append(timed_with_clock(lambda a=a, b=b: np.dot(a, b)))
        if jax_dot is not None:
            ja, jb = jax.device_put(a), jax.device_put(b)
            runs.append(timed_with_clock(lambda ja=ja, jb=jb: jax_dot(ja, jb).block_until_ready()))
        print(f"  {name:<12} " + " ".join(f"{flops / s / 1e9:7.0f}" for s, _ in runs)
              + "   MHz " + " ".join(f"{c:5.0f}" for _, c in runs), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kc", nargs="*", type=int, metavar="KC",
                        help="k blocks, one child each (default: 256 128)")
    parser.add_argument("--avx2", action="store_true",
                        help="the child on a Haswell-class Numba target")
    parser.add_argument("--tile", metavar="ROWS:BYTES", help="the child's register tile")
    parser.add_argument("--child", type=int, metavar="KC", help=argparse.SUPPRESS)
    args = parser.parse_intermixed_args()
    if args.child is not None:
        child(args.child, args.tile)
        return
    tile, avx2 = args.tile, args.avx2
    isa = {"NUMBA_CPU_NAME": "haswell",
           "NUMBA_CPU_FEATURES": "+64bit,+avx,+avx2,+fma,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,"
                                 "+f16c,+bmi,+bmi2,+lzcnt,+popcnt,+movbe"} if avx2 else {}
    for kc in args.kc or [512, 256]:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, **isa)
            command = [sys.executable, __file__, "--child", str(kc),
                       *(["--tile", tile] if tile else [])]
            subprocess.run(command, env=env, check=False)


if __name__ == "__main__":
    main()
