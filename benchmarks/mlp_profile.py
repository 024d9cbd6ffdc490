"""Where the jitted MLP step's time goes on this machine: the whole step (numbax and jax.jit),
the time inside `lowering.dot_general` (BLAS) per call, the rest (fused kernels + driver), and
the same GEMMs in plain numpy as the BLAS floor; then the step under each BLAS-thread policy.

    PYTHONPATH=. python benchmarks/mlp_profile.py
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cpu  # noqa: E402

import numbax  # noqa: E402
from numbax._src.compiler import lowering  # noqa: E402


def median(fn, reps: int = 31) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    rng = np.random.default_rng(0)
    name, label, f_nb, nb_args, f_jx, j_args = bench_cpu.training_cases(rng)[0]
    print(f"mlp_profile | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores")
    t_step = median(lambda: f_nb(*nb_args))
    t_jax = median(lambda: f_jx(*j_args)) if f_jx is not None else float("nan")
    print(f"step: numbax {t_step * 1e3:.3f} ms, jax.jit {t_jax * 1e3:.3f} ms, "
          f"ratio {t_step / t_jax:.2f}")

    calls: list[tuple[tuple, float]] = []
    original = lowering.dot_general

    def timed(x, y, dimension_numbers, out_dtype):
        t = time.perf_counter()
        out = original(x, y, dimension_numbers, out_dtype)
        calls.append(((x.shape, y.shape, dimension_numbers), time.perf_counter() - t))
        return out

    lowering.dot_general = timed
    try:
        per_step = []
        for _ in range(21):
            calls.clear()
            t = time.perf_counter()
            f_nb(*nb_args)
            per_step.append((time.perf_counter() - t, sum(c[1] for c in calls), list(calls)))
    finally:
        lowering.dot_general = original
    per_step.sort(key=lambda r: r[0])
    total, in_dot, detail = per_step[len(per_step) // 2]
    print(f"median instrumented step {total * 1e3:.3f} ms: dot_general {in_dot * 1e3:.3f} ms "
          f"({len(detail)} calls), rest {(total - in_dot) * 1e3:.3f} ms")
    floor = 0.0
    for (xs, ys, dn), t in detail:
        (xc, yc), _ = dn
        a = np.ones(xs, np.float32)
        b = np.ones(ys, np.float32)
        t_np = median(lambda a=a, b=b, ax=(xc, yc): np.tensordot(a, b, ax), reps=21)
        floor += t_np
        print(f"  {xs} x {ys} contract {xc}/{yc}: {t * 1e6:8.1f} us in step, "
              f"np.tensordot {t_np * 1e6:8.1f} us")
    print(f"numpy GEMM floor {floor * 1e3:.3f} ms")
    for threads in (1, 2, 4, 8, 16):
        if threads > (os.cpu_count() or 1):
            break
        numbax.config.update("cpu_threads", threads)
        print(f"cpu_threads={threads}: step {median(lambda: f_nb(*nb_args)) * 1e3:.3f} ms")
    numbax.config.update("cpu_threads", 0)


if __name__ == "__main__":
    main()
