"""Matrix products inside compiled control flow (cpu/control_flow.py): the operands as Numba
matrices, and the call that runs them on the loop's threads.

A float product of matrices runs as OpenBLAS's one-thread kernel on blocks of C
(runtime/blas_parts.loop_block), a block an iteration of a prange in the loop kernel itself,
on the Numba threads the driver gives the loop, while the driver holds OpenBLAS
itself to one thread. Before, a loop body's products were np.dot on OpenBLAS's own threads,
which spun against Numba's after each parallel region, so bodies stayed serial (an LSTM's
scans: 92-108 ms on 16 cores, 44-46 after, jax.jit 56; docs/performance.md). Other products
(vectors, complex, mixed dtypes) keep np.dot's array form (lowerings/dot.py).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from numbax._src.compiler.cpu.runtime import blas_parts
from numbax._src.core import JaxprEqn


def render(eqn: JaxprEqn, ins: list[str], fresh: Callable[[], str], lines: list[str],
           pad: str, threaded: bool) -> tuple[str, int, bool] | None:
    """Appends the lines of a float32 or float64 product of matrices with every side at
    least 2 to `lines`; returns (the result's name, its multiply-adds, whether it wrote a
    prange), or None for the other products. From blas_parts.THREADED_MACS up, and where
    `threaded` (not inside another prange), the blocks of C are the iterations of a prange
    over the kernel's `loop_threads`; smaller products are one block."""
    x, y = (v.aval for v in eqn.invars[:2])
    if not (x.dtype == y.dtype == eqn.outvars[0].aval.dtype) or \
            x.dtype not in (np.float32, np.float64) or not blas_parts.available():
        return None
    operands = matrix_operands(ins, eqn)
    if operands is None or min(operands[2]) < 2:
        return None
    x2, y2, (m, k, n) = operands
    out = eqn.outvars[0].aval.shape
    a, b, c = fresh(), fresh(), fresh()
    lines += [f"{pad}{a} = {x2}", f"{pad}{b} = {y2}",
              f"{pad}{c} = np.empty({out}, np.{x.dtype.name})"]
    cm = c
    if out != (m, n):  # the product's (m, n) view of the result
        cm = fresh()
        lines.append(f"{pad}{cm} = {c}.reshape(({m}, {n}))")
    blocks = threaded and m * k * n >= blas_parts.THREADED_MACS
    if blocks:
        rows, cols, q = fresh(), fresh(), fresh()
        lines += [f"{pad}{rows}, {cols} = bp.loop_grid(loop_threads, {m}, {n})",
                  f"{pad}for {q} in prange({rows} * {cols}):",
                  f"{pad}    bp.loop_block(loop_blas, loop_width, {q}, {rows}, {cols}, "
                  f"{a}, {b}, {cm})"]
    else:
        lines.append(f"{pad}bp.loop_block(loop_blas, loop_width, 0, 1, 1, {a}, {b}, {cm})")
    return c, m * k * n, blocks


def matrix_operands(args: list[str], eqn: JaxprEqn):
    """(x as an (m, k) matrix, y as a (k, n) matrix, (m, k, n)): the expressions of a float
    product without batch dims inside compiled control flow (for `render`, and for np.dot's
    array form in lowerings/dot.py); None for other products."""
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    x, y = eqn.invars[0].aval, eqn.invars[1].aval
    out = eqn.outvars[0].aval
    if xb or yb or x.ndim == 0 or y.ndim == 0 or out.dtype.kind not in "fc":
        return None
    if x.dtype != out.dtype or y.dtype != out.dtype:
        return None
    xf = [d for d in range(x.ndim) if d not in xc]
    yf = [d for d in range(y.ndim) if d not in yc]
    k = int(np.prod([x.shape[d] for d in xc], dtype=np.int64))
    m = int(np.prod([x.shape[d] for d in xf], dtype=np.int64))
    n = int(np.prod([y.shape[d] for d in yf], dtype=np.int64))
    x2 = _as_matrix(args[0], x.shape, [*xf, *xc], (m, k))
    y2 = _as_matrix(args[1], y.shape, [*yc, *yf], (k, n))
    return x2, y2, (m, k, n)


def _as_matrix(name: str, shape: tuple, perm: list[int], matrix: tuple[int, int]) -> str:
    """`name` transposed by `perm` as a matrix np.dot takes in Numba: C-contiguous, or the
    transpose of a C-contiguous matrix. Operands already in order, and matrices transposed,
    skip the general transpose: Numba takes seconds to compile its first transpose-by-tuple."""
    if perm == sorted(perm):
        x = f"np.ascontiguousarray({name})"
    elif len(shape) == 2:  # a transposed view: BLAS reads it in place (a copy in Numba is
        x = f"np.ascontiguousarray({name}).T"  # an element-by-element strided loop)
    else:
        x = f"np.ascontiguousarray({name}.transpose({tuple(perm)}))"
    return x if tuple(shape[d] for d in perm) == matrix else f"{x}.reshape({matrix})"


