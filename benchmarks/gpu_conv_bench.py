# ruff: noqa: B023  (benchmark closures run immediately, inside their loop iteration)
"""GPU convolutions (runtime/cudnn.py where cudnn-frontend is installed, else kernels/conv.py:
im2col + one cuBLAS product) against JAX on
the same GPU, one process, about a minute.

    PYTHONPATH=. python3 benchmarks/gpu_conv_bench.py            # every case
    PYTHONPATH=. python3 benchmarks/gpu_conv_bench.py --quick    # the ResNet 3x3 case only

Each row: numbax jit(backend="gpu") and jax.jit milliseconds per call (median of 5 trials of 20
calls, after a compile call), jax/numbax (above 1: numbax is faster), the largest difference
from JAX relative to JAX's largest magnitude, at the default precision (both TF32 for float32)
and at "highest" (full float32: the layout and padding logic, not TF32 rounding), and whether
the convolution went to cuDNN, to im2col and cuBLAS, or to numbax's own matmul kernel (without
CuPy; much slower).
The headline case is issue 18's: (32, 56, 56, 64) NHWC * 3x3x64x64 HWIO, SAME, float32, and its
two gradients (the input's and the kernel's cotangent, each a convolution itself)."""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import numbax
from numbax import lax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cuda import timeit  # noqa: E402

NHWC = ("NHWC", "HWIO", "NHWC")
NCHW = ("NCHW", "OIHW", "NCHW")


def cases(quick: bool) -> list[tuple]:
    """(name, lhs shape, rhs shape, strides, padding, dimension_numbers, groups, grads)."""
    main = [("resnet 3x3 NHWC", (32, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME", NHWC, 1,
             True)]
    if quick:
        return main
    return main + [
        ("3x3 NCHW", (32, 64, 56, 56), (64, 64, 3, 3), (1, 1), "SAME", NCHW, 1, False),
        ("3x3 s2 NHWC", (32, 56, 56, 64), (3, 3, 64, 128), (2, 2), "SAME", NHWC, 1, True),
        ("1x1 NHWC", (32, 56, 56, 64), (1, 1, 64, 256), (1, 1), "VALID", NHWC, 1, False),
        ("depthwise 3x3 NHWC", (32, 56, 56, 64), (3, 3, 1, 64), (1, 1), "SAME", NHWC, 64,
         False),
    ]


def programs(lx, grad, strides, padding, dn, groups, precision=None) -> dict:
    """The forward conv and the two cotangents (d/dx, d/dw of sum(conv * ct)) in the library
    of `lx` (lax module) and `grad`."""
    def conv(x, w):
        return lx.conv_general_dilated(x, w, strides, padding, dimension_numbers=dn,
                                       feature_group_count=groups, precision=precision)

    return {"fwd": lambda x, w, ct: conv(x, w),
            "d/dx": lambda x, w, ct: grad(lambda a: (conv(a, w) * ct).sum())(x),
            "d/dw": lambda x, w, ct: grad(lambda b: (conv(x, b) * ct).sum())(w)}


def relative_error(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the ResNet 3x3 case only")
    quick, start = parser.parse_args().quick, time.perf_counter()
    gpu = numbax.devices("gpu")[0]
    try:
        import jax
        from jax import lax as jlax
        jgpu = jax.devices("gpu")[0]
    except Exception as e:  # noqa: BLE001 - JAX is a bench-only peer
        jax = None
        print(f"(no JAX on the GPU: {type(e).__name__}: {e}; numbax times only)")
    rng = np.random.default_rng(0)
    print(f"gpu_conv_bench | {time.strftime('%Y-%m-%d %H:%M')} | {gpu}")
    print(f"{'case':<20} {'part':<5} {'numbax':>10} {'jax':>10} {'jax/nbx':>8} "
          f"{'err tf32':>9} {'err f32':>9}  path")
    for name, xs, ws, strides, padding, dn, groups, grads in cases(quick):
        fan_in = np.prod(ws) // (ws[-1] if dn == NHWC else ws[0])
        x = rng.normal(size=xs).astype(np.float32)
        w = (rng.normal(size=ws) / np.sqrt(fan_in)).astype(np.float32)
        fast = programs(lax, numbax.grad, strides, padding, dn, groups)
        full = programs(lax, numbax.grad, strides, padding, dn, groups, "highest")
        out = numbax.eval_shape(fast["fwd"], x, w, None)
        ct = rng.normal(size=out.shape).astype(np.float32)
        nargs = [numbax.device_put(a, gpu) for a in (x, w, ct)]
        if jax:
            jargs = [jax.device_put(a, jgpu) for a in (x, w, ct)]
            jfast = programs(jlax, jax.grad, strides, padding, dn, groups)
            jfull = programs(jlax, jax.grad, strides, padding, dn, groups, "highest")
        for part in ("fwd", "d/dx", "d/dw") if grads else ("fwd",):
            fn = numbax.jit(fast[part], backend="gpu")
            text = fn.lower(*nargs).as_text()
            path = "cuDNN" if "dn.conv(" in text else "cuBLAS" if "cb.gemm(" in text else "own"
            t_nb = timeit(lambda: fn(*nargs), numbax.block_until_ready)
            row = f"{name:<20} {part:<5} {t_nb * 1e3:>8.3f}ms"
            if jax:
                jf = jax.jit(jfast[part])
                t_jx = timeit(lambda: jf(*jargs), jax.block_until_ready)
                err = relative_error(fn(*nargs), jf(*jargs))
                err_full = relative_error(numbax.jit(full[part], backend="gpu")(*nargs),
                                          jax.jit(jfull[part])(*jargs))
                row += (f" {t_jx * 1e3:>8.3f}ms {t_jx / t_nb:>8.2f} {err:>9.1e} "
                        f"{err_full:>9.1e}")
            else:
                row += f" {'-':>10} {'-':>8} {'-':>9} {'-':>9}"
            print(row + f"  {path}", flush=True)
    print("err: max |numbax - jax| / max |jax|; expect ~1e-3 at TF32, ~1e-6 at highest. "
          f"({time.perf_counter() - start:.0f} s in all, compiles included)")


if __name__ == "__main__":
    main()
