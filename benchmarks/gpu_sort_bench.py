"""GPU sort: numbax.jit(backend="gpu") against cupy and jax.jit on the same card, float32.

Run on a GPU machine: `PYTHONPATH=. python3 benchmarks/gpu_sort_bench.py [--quick]`.
For each shape: sort (last axis), stable argsort, and a two-operand sort (keys, float32
payload, num_keys=1; cupy: argsort + two take_along_axis). Every numbax and jax result is
checked exactly against numpy's stable sort; cupy's values are checked, its argsort through
the values it gathers. Then the one-thread-per-row kernel against the block kernel on short
rows (compiler/cuda_sort.ROWWISE_MAX). Prints one compact line per case: milliseconds per
call (data already on the device, best of 3 loops) and numbax's time over the others'."""
# ruff: noqa: B023  (benchmark closures run immediately, inside their loop iteration)
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU

import numpy as np  # noqa: E402

SHAPES = [(1000, 1000), (100, 10000), (10, 100000), (1, 10**7)]
SHORT = [(10**6, 4), (250000, 16)]  # one thread per row against the block kernel


def timeit(fn, sync, budget: float = 0.3) -> float:
    """Seconds per call: a warm-up, then the best of 3 loops sized to ~budget seconds."""
    sync(fn())
    t = time.perf_counter()
    sync(fn())
    one = max(time.perf_counter() - t, 1e-5)
    reps = int(min(50, max(2, budget / one)))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            out = fn()
        sync(out)
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def main(quick: bool) -> None:
    import cupy as cp
    import jax
    import jax.numpy as xnp

    import numbax
    import numbax.numpy as jnp
    from numbax._src.compiler.cuda.kernels import sort as cuda_sort

    gpu = numbax.devices("gpu")[0]
    print(f"card: {gpu.device_kind}; numbax/cupy/jax ms per call, ratio = numbax / other",
          flush=True)

    def nb_sync(out):
        (out[0] if isinstance(out, tuple | list) else out).block_until_ready()

    def cp_sync(out):
        cp.cuda.Device().synchronize()

    jx_sync = nb_sync
    rng = np.random.default_rng(0)
    shapes = SHAPES[:2] if quick else SHAPES
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        x.reshape(-1)[:: 97] = np.round(x.reshape(-1)[:: 97])  # ties: stability matters
        pay = rng.standard_normal(shape).astype(np.float32)
        perm = np.argsort(x, axis=-1, kind="stable")
        want = {"sort": (np.take_along_axis(x, perm, -1),),
                "argsort": (perm.astype(np.int32),),
                "sort2": (np.take_along_axis(x, perm, -1), np.take_along_axis(pay, perm, -1))}
        xd, pd = numbax.device_put(x, gpu), numbax.device_put(pay, gpu)
        xc, pc = cp.asarray(x), cp.asarray(pay)
        xj, pj = jax.device_put(x), jax.device_put(pay)
        nb = {"sort": (numbax.jit(lambda a: jnp.sort(a, axis=-1), backend="gpu"), (xd,)),
              "argsort": (numbax.jit(lambda a: jnp.argsort(a, axis=-1), backend="gpu"),
                          (xd,)),
              "sort2": (numbax.jit(lambda a, b: numbax.lax.sort((a, b), num_keys=1),
                                   backend="gpu"), (xd, pd))}
        jx = {"sort": (jax.jit(lambda a: xnp.sort(a, axis=-1)), (xj,)),
              "argsort": (jax.jit(lambda a: xnp.argsort(a, axis=-1, stable=True)), (xj,)),
              "sort2": (jax.jit(lambda a, b: jax.lax.sort((a, b), num_keys=1)), (xj, pj))}

        def cp_sort2(a, b):
            i = cp.argsort(a, axis=-1)
            return cp.take_along_axis(a, i, -1), cp.take_along_axis(b, i, -1)

        cpf = {"sort": (lambda a: cp.sort(a, axis=-1), (xc,)),
               "argsort": (lambda a: cp.argsort(a, axis=-1), (xc,)), "sort2": (cp_sort2, (xc, pc))}
        for op in ("sort", "argsort", "sort2"):
            line = f"{op:7s} {str(shape):14s}"
            try:
                f, args = nb[op]
                t = time.perf_counter()
                got = f(*args)
                nb_sync(got)
                compile_s = time.perf_counter() - t
                got = got if isinstance(got, tuple | list) else (got,)
                ok = all(np.array_equal(np.asarray(g), w, equal_nan=True)
                         for g, w in zip(got, want[op], strict=True))
                tn = timeit(lambda: f(*args), nb_sync)
                line += f" numbax {tn * 1e3:8.3f}{'' if ok else ' WRONG'} (1st {compile_s:.1f}s)"
            except Exception as e:  # noqa: BLE001 - reported, the other rows still run
                line += f" numbax FAIL {type(e).__name__}: {str(e)[:200]}"
                tn = float("nan")
            for name, table, sync in (("cupy", cpf, cp_sync), ("jax", jx, jx_sync)):
                try:
                    f, args = table[op]
                    got = f(*args)
                    got = got if isinstance(got, tuple | list) else (got,)
                    got = [np.asarray(g.get() if name == "cupy" else g) for g in got]
                    if name == "cupy" and op == "argsort":  # not promised stable: its values
                        ok = np.array_equal(np.take_along_axis(x, got[0], -1), want["sort"][0])
                    else:
                        ok = all(np.array_equal(g, w) for g, w in zip(got, want[op], strict=True))
                    to = timeit(lambda: f(*args), sync)
                    line += (f" | {name} {to * 1e3:8.3f}{'' if ok else ' WRONG'}"
                             f" x{tn / to:.2f}")
                except Exception as e:  # noqa: BLE001
                    line += f" | {name} FAIL {type(e).__name__}: {str(e)[:120]}"
            print(line, flush=True)

    # short rows: one thread per row against the block kernel (ROWWISE_MAX picks at render)
    saved = cuda_sort.ROWWISE_MAX
    for shape in SHORT:
        x = rng.integers(0, 3, shape).astype(np.float32)
        xd = numbax.device_put(x, gpu)
        line = f"argsort short rows {shape}:"
        for label, limit in (("rowwise", shape[1]), ("block", 0)):
            cuda_sort.ROWWISE_MAX = limit
            try:
                f = numbax.jit(lambda a: jnp.argsort(a, axis=-1), backend="gpu")  # fresh cache
                ok = np.array_equal(np.asarray(f(xd)), np.argsort(x, axis=-1, kind="stable"))
                line += f" {label} {timeit(lambda: f(xd), nb_sync) * 1e3:.3f} ms" + (
                    "" if ok else " WRONG")
            except Exception as e:  # noqa: BLE001
                line += f" {label} FAIL {type(e).__name__}: {str(e)[:120]}"
        cuda_sort.ROWWISE_MAX = saved
        print(line, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first two shapes only")
    main(parser.parse_args().quick)
