"""Time numbax's vectorisable exp against numpy, a libm Numba loop and jax.jit (exp and selu).

    PYTHONPATH=. python benchmarks/bench_fastmath.py
"""
import argparse
import math
import statistics
import time

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import fastmath as fm

SIZES = (1_000_000, 10_000_000)
DTYPES = (np.float32, np.float64)
REPEATS = 7
SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805
_F32_ALPHA = np.float32(SELU_ALPHA)
_F32_SCALE = np.float32(SELU_SCALE)
_F32_ONE = np.float32(1.0)
_F32_ZERO = np.float32(0.0)
_OPTS = {"parallel": True, "error_model": "numpy"}

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:  # jax is only a benchmark peer
    jax = None


@njit(**_OPTS)
def exp_libm(a, o):
    for i in prange(a.shape[0]):
        o[i] = math.exp(a[i])


@njit(**_OPTS)
def exp_fm64(a, o):
    for i in prange(a.shape[0]):
        o[i] = fm.exp_f64(a[i])


@njit(**_OPTS)
def exp_fm32(a, o):
    for i in prange(a.shape[0]):
        o[i] = fm.exp_f32(a[i])


@njit(**_OPTS)
def selu_libm64(a, o):
    for i in prange(a.shape[0]):
        x = a[i]
        o[i] = SELU_SCALE * (x if x > 0.0 else SELU_ALPHA * (math.exp(x) - 1.0))


@njit(**_OPTS)
def selu_libm32(a, o):
    for i in prange(a.shape[0]):
        x = a[i]
        o[i] = _F32_SCALE * (x if x > _F32_ZERO else _F32_ALPHA * (math.exp(x) - _F32_ONE))


@njit(**_OPTS)
def selu_fm64(a, o):
    for i in prange(a.shape[0]):
        x = a[i]
        o[i] = SELU_SCALE * (x if x > 0.0 else SELU_ALPHA * (fm.exp_f64(x) - 1.0))


@njit(**_OPTS)
def selu_fm32(a, o):
    for i in prange(a.shape[0]):
        x = a[i]
        o[i] = _F32_SCALE * (x if x > _F32_ZERO else _F32_ALPHA * (fm.exp_f32(x) - _F32_ONE))


def selu_numpy(a, o):
    alpha, scale = a.dtype.type(SELU_ALPHA), a.dtype.type(SELU_SCALE)
    np.multiply(scale, np.where(a > 0, a, alpha * (np.exp(a) - 1)), out=o)


def median_ms(fn):
    fn()  # warm up: compile, fault pages in
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def jax_runner(op, a):
    if jax is None:
        return None
    if op == "exp":
        f = jax.jit(jnp.exp)
    else:
        f = jax.jit(lambda x: SELU_SCALE * jnp.where(x > 0, x, SELU_ALPHA * (jnp.exp(x) - 1)))
    x = jax.device_put(a)
    return lambda: f(x).block_until_ready()


def runners(op, a, o):
    f32 = a.dtype == np.float32
    if op == "exp":
        libm, fast = exp_libm, (exp_fm32 if f32 else exp_fm64)
        ref = lambda: np.exp(a, out=o)  # noqa: E731
    else:
        libm = selu_libm32 if f32 else selu_libm64
        fast = selu_fm32 if f32 else selu_fm64
        ref = lambda: selu_numpy(a, o)  # noqa: E731
    return {
        "numpy": ref,
        "numba libm": lambda: libm(a, o),
        "numba fm": lambda: fast(a, o),
        "jax.jit": jax_runner(op, a),
    }


def main():
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    rng = np.random.default_rng(0)
    print(f"numba threads: default; jax: {jax.__version__ if jax else 'not installed'}")
    print(f"{'op':5} {'dtype':8} {'n':>9} | {'numpy':>8} {'libm':>8} {'fm':>8} {'jax':>8}"
          f" | {'np/fm':>6} {'libm/fm':>7} {'jax/fm':>6}   (median ms)")
    for op in ("exp", "selu"):
        for dtype in DTYPES:
            for n in SIZES:
                a = rng.uniform(-10.0, 10.0, n).astype(dtype)
                o = np.empty_like(a)
                ms = {k: median_ms(f) if f else math.nan for k, f in runners(op, a, o).items()}
                fast = ms["numba fm"]
                print(f"{op:5} {dtype.__name__:8} {n:>9} | {ms['numpy']:8.2f} "
                      f"{ms['numba libm']:8.2f} {fast:8.2f} {ms['jax.jit']:8.2f} | "
                      f"{ms['numpy'] / fast:6.1f} {ms['numba libm'] / fast:7.1f} "
                      f"{ms['jax.jit'] / fast:6.1f}")


if __name__ == "__main__":
    main()
