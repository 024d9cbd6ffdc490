"""numbax's own GEMM (`gemm_cpu`) against numpy's BLAS (and jax.jit where installed), one run:
medians, GFLOP/s and ratios (no asserts).

Shapes: the MLP step's five large products (with their transposed operands), square 1000²
and 2000², and two ragged ones; float32 and float64. Each shape is timed np.dot first, then
after a pause (OpenBLAS's workers spin for tens of ms after a threaded call and would slow
the next threads on few cores) gemm_cpu at the thread count numbax would use, then jax.jit.
The last column: which one `cpu_matmul="auto"` picks here (`library.own_gemm`).

    PYTHONPATH=. python benchmarks/gemm_bench.py [--f32] [--batch N]   (N: the MLP's batch, 128)
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import median_time  # noqa: E402

from numbax._src.compiler.cpu.runtime import blas, library  # noqa: E402
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu  # noqa: E402

try:
    import jax  # noqa: E402
    import jax.numpy as jjnp  # noqa: E402
    jax.config.update("jax_enable_x64", True)
except ImportError:  # JAX is a bench-only peer
    jax = None


def shapes(batch: int):
    """(name, (m, k), (k, n), A transposed, B transposed): the MLP step's five large products
    at `batch` rows, then squares and a ragged product."""
    return [
        ("x @ W1", (batch, 784), (784, 512), False, False),
        ("h1 @ W2", (batch, 512), (512, 512), False, False),
        ("h1ᵀ @ d2", (512, batch), (batch, 512), True, False),
        ("xᵀ @ d1", (784, batch), (batch, 512), True, False),
        ("d2 @ W2ᵀ", (batch, 512), (512, 512), False, True),
        ("1000²", (1000, 1000), (1000, 1000), False, False),
        ("2000²", (2000, 2000), (2000, 2000), False, False),
        ("ragged", (131, 300), (300, 77), False, True),
    ]


def _operand(rng, shape, dtype, transposed):
    if transposed:
        return np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(dtype)).T
    return rng.standard_normal(shape).astype(dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--f32", action="store_true", help="float32 only")
    parser.add_argument("--batch", type=int, default=128, metavar="N",
                        help="the MLP's batch (default %(default)s)")
    args = parser.parse_args()
    import llvmlite.binding as ll
    import numba

    rng = np.random.default_rng(0)
    avx512 = bool(ll.get_host_cpu_features().get("avx512f"))
    print(f"gemm_bench | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores | "
          f"{numba.get_num_threads()} Numba threads | host avx512f {avx512} | OpenBLAS core "
          f"{blas.blas_core() or '?'}")
    print(f"{'product':<10} {'dtype':<8} {'np.dot':>9} {'gemm_cpu':>9} {'jax.jit':>9} "
          f"{'GF/s np':>8} {'GF/s own':>8} {'own/np':>7} {'own/jax':>8}  auto picks")
    dtypes = (np.float32,) if args.f32 else (np.float32, np.float64)
    batch = args.batch
    for dtype in dtypes:
        for name, (m, k), (_, n), at, bt in shapes(batch):
            a, b = _operand(rng, (m, k), dtype, at), _operand(rng, (k, n), dtype, bt)
            macs = m * k * n
            t_np = median_time(lambda a=a, b=b: np.dot(a, b))
            time.sleep(0.3)
            threads = library.gemm_threads(macs)
            t_own = median_time(lambda a=a, b=b, n=threads: gemm_cpu.matmul(a, b, n))
            if jax is not None:
                f = jax.jit(jjnp.matmul)
                ja, jb = jax.device_put(a), jax.device_put(b)
                t_jx = median_time(lambda f=f, ja=ja, jb=jb: f(ja, jb).block_until_ready())
            else:
                t_jx = float("nan")
            print(f"{name:<10} {np.dtype(dtype).name:<8} {t_np * 1e6:>7.1f}us "
                  f"{t_own * 1e6:>7.1f}us {t_jx * 1e6:>7.1f}us {2 * macs / t_np / 1e9:>8.1f} "
                  f"{2 * macs / t_own / 1e9:>8.1f} {t_own / t_np:>7.2f} {t_own / t_jx:>8.2f}  "
                  f"{'gemm_cpu' if library.own_gemm(macs) else 'BLAS'}")
            time.sleep(0.3)


if __name__ == "__main__":
    main()
