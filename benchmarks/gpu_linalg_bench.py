# ruff: noqa: B023  (benchmark closures run immediately, inside their loop iteration)
"""GPU linear algebra (compiler/cuda_linalg.py) against numpy's LAPACK on the host, one process.

    PYTHONPATH=. python3 benchmarks/gpu_linalg_bench.py

Each row: numbax jit(backend="gpu") time per call (median of 5, after a compile call), numpy
time, and the largest reconstruction error of the GPU result (P L U = A, Q R = A, ...)."""
from __future__ import annotations

import argparse
import time

import numpy as np

import numbax
from numbax.lax import linalg as L


def median_time(fn, reps: int = 5) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    gpu = numbax.devices("gpu")[0]
    rng = np.random.default_rng(0)
    print(f"gpu_linalg_bench | {time.strftime('%Y-%m-%d %H:%M')} | {gpu}")
    print(f"{'op':<10} {'dtype':<8} {'batch x n':<12} {'gpu':>10} {'numpy':>10} {'err':>9}")
    for dt in (np.float32, np.float64):
        for batch, n in ((1000, 16), (1, 256), (1, 1024)):
            a = rng.normal(size=(batch, n, n)).astype(dt)
            spd = (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dt)
            ga, gs = numbax.device_put(a, gpu), numbax.device_put(spd, gpu)
            cases = [
                ("cholesky", lambda x: L.cholesky(x), gs, spd, np.linalg.cholesky,
                 lambda r, x: r @ np.swapaxes(r, -1, -2) - x),
                ("qr", lambda x: L.qr(x), ga, a, np.linalg.qr, lambda r, x: r[0] @ r[1] - x),
                ("eigh", lambda x: L.eigh(x), gs, spd, np.linalg.eigh,
                 lambda r, x: (r[0] * r[1][..., None, :]) @ np.swapaxes(r[0], -1, -2) - x),
                ("svd", lambda x: L.svd(x, full_matrices=False), ga, a,
                 lambda x: np.linalg.svd(x, full_matrices=False),
                 lambda r, x: (r[0] * r[1][..., None, :]) @ r[2] - x),
            ]
            for name, f, gx, hx, ref, resid in cases:
                if n == 1024 and name in ("eigh", "svd") and dt == np.float64:
                    continue  # one-block Jacobi: seconds per call; float32 shows the trend
                fj = numbax.jit(f, backend="gpu")
                out = fj(gx)
                numbax.block_until_ready(out)
                t_gpu = median_time(lambda: numbax.block_until_ready(fj(gx)), reps=3)
                t_np = median_time(lambda: ref(hx), reps=3)
                r = [np.asarray(o, np.float64) for o in numbax.tree.leaves(out)]
                r = r[0] if len(r) == 1 else r
                err = float(np.max(np.abs(resid(r, hx.astype(np.float64)))))
                print(f"{name:<10} {np.dtype(dt).name:<8} {f'{batch}x{n}':<12} "
                      f"{t_gpu * 1e3:>8.2f}ms {t_np * 1e3:>8.2f}ms {err:>9.1e}", flush=True)


if __name__ == "__main__":
    main()
