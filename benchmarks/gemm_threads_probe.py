"""How numbax's GEMM scales with threads and its k block on this host: GFLOP/s per shape for
thread counts and KC values, np.dot alongside (no asserts).

    PYTHONPATH=. python benchmarks/gemm_threads_probe.py [KC ...]

Each KC runs in a child process with its own Numba cache (KC is a compile-time constant of
runtime/gemm.py, set in the child before anything compiles).
"""
from __future__ import annotations

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


def best(fn, reps=7) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def child(kc: int) -> None:
    from numbax._src.compiler.cpu.runtime import gemm

    gemm.KC = kc
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, cores // 4, cores // 2, cores} - {0})
    rng = np.random.default_rng(0)
    print(f"KC={kc}  threads: {counts}  (GFLOP/s; np.dot last)", flush=True)
    for name, m, k, n in SHAPES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        flops = 2.0 * m * n * k
        row = [flops / best(lambda t=t, a=a, b=b: gemm.matmul(a, b, t)) / 1e9 for t in counts]
        row.append(flops / best(lambda a=a, b=b: np.dot(a, b)) / 1e9)
        print(f"  {name:<12} " + " ".join(f"{g:7.0f}" for g in row), flush=True)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(int(sys.argv[2]))
        return
    for kc in [int(a) for a in sys.argv[1:]] or [256, 128]:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            subprocess.run([sys.executable, __file__, "--child", str(kc)], env=env, check=False)


if __name__ == "__main__":
    main()
