"""Where the jitted MLP step's time goes on this machine: the whole step (numbax and jax.jit),
the time inside `library.dot` per matrix product, the rest (fused kernels + driver), the same
products alone through np.dot (BLAS) and through numbax's `gemm_cpu`; then the step with each
`cpu_matmul` choice and under each thread count.

    PYTHONPATH=. python benchmarks/mlp_profile.py [--batch N]   (default 128)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cpu  # noqa: E402

import numbax  # noqa: E402
from numbax._src.compiler.cpu.runtime import blas, library  # noqa: E402
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu  # noqa: E402


def median(fn, reps: int = 31) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, metavar="N",
                        help="the same step at another batch size (default: 128)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    name, label, f_nb, nb_args, f_jx, j_args = bench_cpu.training_cases(rng)[0]
    if args.batch is not None:  # the same step at another batch size
        batch = args.batch
        params, _, _ = j_args
        x = rng.normal(size=(batch, 784)).astype(np.float32)
        y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
        nb_args = ([(numbax.numpy.asarray(w), numbax.numpy.asarray(b)) for w, b in params],
                   numbax.numpy.asarray(x), numbax.numpy.asarray(y))
        j_args = (params, x, y)
        print(f"batch {batch}")
    print(f"mlp_profile | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores")
    t_step = median(lambda: f_nb(*nb_args))
    print(f"step: numbax {t_step * 1e3:.3f} ms (jax.jit at the end: once it has run, its "
          f"threads slow later numbax runs in this process on few cores)")

    for choice in ("blas", "numbax"):
        with numbax.config.override("cpu_matmul", choice):
            print(f"cpu_matmul={choice}: step {median(lambda: f_nb(*nb_args)) * 1e3:.3f} ms")

    # Every matrix product of the step goes through library.dot (lw.dot, or dot_general's
    # unbatched case); time each call and keep its operands' shapes and layouts.
    calls: list[tuple[tuple, float]] = []
    original = library.dot

    def timed(x, y, macs, *epilogue):
        t = time.perf_counter()
        out = original(x, y, macs, *epilogue)
        calls.append(((x.shape, x.flags.f_contiguous, y.shape, y.flags.f_contiguous, macs),
                      time.perf_counter() - t))
        return out

    library.dot = timed
    try:
        per_step = []
        for _ in range(21):
            calls.clear()
            t = time.perf_counter()
            f_nb(*nb_args)
            per_step.append((time.perf_counter() - t, sum(c[1] for c in calls), list(calls)))
    finally:
        library.dot = original
    per_step.sort(key=lambda r: r[0])
    total, in_dot, detail = per_step[len(per_step) // 2]
    print(f"median instrumented step {total * 1e3:.3f} ms: products {in_dot * 1e3:.3f} ms "
          f"({len(detail)} calls), rest {(total - in_dot) * 1e3:.3f} ms; "
          f"OpenBLAS core {blas.blas_core() or '?'}")
    # np.dot first, then gemm_cpu, with a pause between: OpenBLAS's worker threads spin for
    # tens of ms after a threaded call, and on 2 cores they slow any Numba threads meanwhile.
    operands = []
    for (xs, xt, ys, yt, macs), t in detail:
        a = np.ones(xs[::-1], np.float32).T if xt else np.ones(xs, np.float32)
        b = np.ones(ys[::-1], np.float32).T if yt else np.ones(ys, np.float32)
        operands.append((a, b, macs, t))
    t_blas = [median(lambda a=a, b=b: np.dot(a, b), reps=21) for a, b, _, _ in operands]
    time.sleep(0.5)
    t_own = []
    for (a, b, macs, _), t_np in zip(operands, t_blas, strict=True):
        threads = library.gemm_threads(macs)
        t_own.append(median(lambda a=a, b=b, n=threads: gemm_cpu.matmul(a, b, n), reps=21)
                     if gemm_cpu.supports(a, b) else t_np)
    for (a, b, macs, t), t_np, t_g in zip(operands, t_blas, t_own):
        print(f"  {a.shape}{'ᵀ' if a.flags.f_contiguous else ''} @ "
              f"{b.shape}{'ᵀ' if b.flags.f_contiguous else ''}: {t * 1e6:8.1f} us in step, "
              f"np.dot {t_np * 1e6:8.1f} us, gemm_cpu {t_g * 1e6:8.1f} us "
              f"({library.gemm_threads(macs)} threads); the step used "
              f"{'gemm_cpu' if library.runs_on_own_gemm(a, b, macs) else 'BLAS'}")
    print(f"products alone: np.dot {sum(t_blas) * 1e3:.3f} ms, gemm_cpu where it applies "
          f"{sum(t_own) * 1e3:.3f} ms")
    for threads in (1, 2, 4, 8, 16):
        if threads > (os.cpu_count() or 1):
            break
        numbax.config.update("cpu_threads", threads)
        print(f"cpu_threads={threads}: step {median(lambda: f_nb(*nb_args)) * 1e3:.3f} ms")
    numbax.config.update("cpu_threads", 0)
    t_step = median(lambda: f_nb(*nb_args))
    t_jax = median(lambda: f_jx(*j_args)) if f_jx is not None else float("nan")
    print(f"step again: numbax {t_step * 1e3:.3f} ms, jax.jit {t_jax * 1e3:.3f} ms, "
          f"ratio {t_step / t_jax:.2f}")


if __name__ == "__main__":
    main()
