"""GPU pooling and FFT: numbax.jit(backend="gpu") against jax.jit on the same card (issue 18).

Run on a GPU machine: `PYTHONPATH=. python3 benchmarks/gpu_pool_fft_bench.py` (under a minute).
Cases: max-pool 2x2 stride 2 forward, and forward + backward (grad of sum(pool(x)**2)), on
(32, 56, 56, 64) float32 NHWC; FFT of 2**20 complex64; rfft2 of 1024x1024 float32. Each
numbax result is checked against jax's on the GPU (max-pool exactly: no ties in normal data;
FFTs to float32 rounding, relative to the largest magnitude). Also says whether the numbax
program ran on the device: pooling in numbax's kernels (cuda/kernels/windows.py), fft through
cuFFT (cuda/runtime/cufft.py; without CuPy it runs on the host). Prints one line per case:
milliseconds per call (data on the device, best of 3 loops), numbax / jax, first-call
seconds (numbax includes compiling its kernels)."""
# ruff: noqa: B023  (benchmark closures run immediately, inside their loop iteration)
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_sort_bench import timeit  # noqa: E402


def main() -> None:
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    import jax
    import jax.numpy as xnp

    import numbax
    import numbax.numpy as jnp
    from numbax import lax
    from numbax._src.compiler.cuda.runtime import cufft

    gpu = numbax.devices("gpu")[0]
    print(f"card: {gpu.device_kind}; jax {jax.__version__} on {jax.devices()[0].platform}; "
          f"cuFFT through CuPy available: {cufft.available()}", flush=True)
    print("ms per call; ratio = numbax / jax", flush=True)

    def sync(out):
        for leaf in out if isinstance(out, tuple | list) else (out,):
            leaf.block_until_ready()

    def nb_pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def jx_pool(x):
        return jax.lax.reduce_window(x, -xnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                     "VALID")

    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 56, 56, 64)).astype(np.float32)
    z = (rng.standard_normal(2 ** 20) + 1j * rng.standard_normal(2 ** 20)).astype(np.complex64)
    r = rng.standard_normal((1024, 1024)).astype(np.float32)
    cases = [
        ("max-pool 2x2 fwd (32,56,56,64) f32", nb_pool, jx_pool, x, 0.0),
        ("max-pool 2x2 fwd+bwd", numbax.grad(lambda a: jnp.sum(nb_pool(a) ** 2)),
         jax.grad(lambda a: xnp.sum(jx_pool(a) ** 2)), x, 1e-6),
        ("fft complex64 2^20", lambda a: jnp.fft.fft(a), lambda a: xnp.fft.fft(a), z, 1e-5),
        ("rfft2 float32 1024^2", lambda a: jnp.fft.rfft2(a), lambda a: xnp.fft.rfft2(a), r,
         1e-5),
    ]
    for name, nb_fn, jx_fn, arg, tol in cases:
        line = f"{name:36s}"
        nb = numbax.jit(nb_fn, backend="gpu")
        jx = jax.jit(jx_fn)
        xd, xj = numbax.device_put(arg, gpu), jax.device_put(arg)
        try:
            t = time.perf_counter()
            want = jx(xj)
            sync(want)
            jx_first = time.perf_counter() - t
            t = time.perf_counter()
            got = nb(xd)
            sync(got)
            nb_first = time.perf_counter() - t
            got, want = np.asarray(got), np.asarray(want)
            err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            ok = got.shape == want.shape and got.dtype == want.dtype and err <= tol
            text = nb.lower(xd).as_text()
            where = ("host!" if "rt.on_host(" in text else
                     "cuFFT" if "cf.fft(" in text else "device")
            tn = timeit(lambda: nb(xd), sync)
            tj = timeit(lambda: jx(xj), sync)
            line += (f" numbax {tn * 1e3:8.3f} [{where}] | jax {tj * 1e3:8.3f} | x{tn / tj:5.2f}"
                     f" | rel.err {err:.1e} {'ok' if ok else 'WRONG ' + str(got.dtype)}"
                     f" | 1st call numbax {nb_first:.1f}s jax {jx_first:.1f}s")
        except Exception as e:  # noqa: BLE001 - reported, the other cases still run
            line += f" FAIL {type(e).__name__}: {str(e)[:300]}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
