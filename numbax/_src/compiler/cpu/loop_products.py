"""Matrix products inside compiled control flow (cpu/control_flow.py): the operands as Numba
matrices, and the call that runs them on the loop's threads.

A float product of matrices runs on blocks of C, a block an iteration of a prange in the loop
kernel itself, on the Numba threads the driver gives the loop (`kind`):
- "gemm": numbax's register tile (runtime/gemm_loops.py), where numbax's GEMM takes every
  product at the program's top level (AVX-512 hosts, or `config.cpu_matmul` "numbax"), so a
  body's product runs the kernel it runs outside a loop;
- "blas": OpenBLAS's one-thread kernel (runtime/blas_parts.loop_block), while the driver holds
  OpenBLAS itself to one thread. Before, a loop body's products were np.dot on OpenBLAS's own
  threads, which spun against Numba's after each parallel region, so bodies stayed serial (an
  LSTM's scans: 92-108 ms on 16 cores, 44-46 after, jax.jit 56; docs/performance.md);
- "": neither (numpy's BLAS out of reach, no register tile): Numba's np.dot.
Other products (vectors, complex, mixed dtypes) keep np.dot's array form (lowerings/dot.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from numbax._src.compiler.cpu.runtime import blas_parts, gemm_loops, library
from numbax._src.compiler.source import runtime_value
from numbax._src.config import config
from numbax._src.core import JaxprEqn


def kind() -> str:
    """The kernel loop bodies' float products run on here: "gemm", "blas" or "" (above)."""
    choice = config.cpu_matmul
    if (choice == "auto" and library.own_gemm_host()) or \
            (choice == "numbax" and library.gemm_tile_host()):
        return "gemm"
    return "blas" if blas_parts.available() else ""


class Rendered(NamedTuple):
    name: str    # the result's
    macs: int    # its multiply-adds
    blocks: bool  # whether it wrote a prange over blocks of C
    words: int   # float64 scratch a thread its "gemm" blocks need (0 for "blas")


def render(eqn: JaxprEqn, ins: list[str], fresh: Callable[[], str], lines: list[str],
           pad: str, threaded: bool) -> Rendered | None:
    """Appends the lines of a float32 or float64 product of matrices with every side at
    least 2 to `lines` (None, nothing appended, for the other products, or where `kind` is
    ""). From blas_parts.THREADED_MACS up, and where `threaded` (not inside another prange),
    the blocks of C are the iterations of a prange over the kernel's `loop_threads`; smaller
    products are one block."""
    x, y = (v.aval for v in eqn.invars[:2])
    use = kind()
    if not (x.dtype == y.dtype == eqn.outvars[0].aval.dtype) or \
            x.dtype not in (np.float32, np.float64) or not use:
        return None
    operands = matrix_operands(ins, eqn)
    if operands is None or min(operands[2]) < 2:
        return None
    x2, y2, (m, k, n) = operands
    out = eqn.outvars[0].aval.shape
    a, b, c = fresh(), fresh(), fresh()
    words = 0
    if use == "gemm":  # flat operands and whether each is its matrix's transpose
        (x2, x_t), (y2, y_t) = flat_operand(ins[0], eqn, 0), flat_operand(ins[1], eqn, 1)
        words = gemm_loops.workspace_words(m, k, n, x.dtype.itemsize, x_t)
    lines += [f"{pad}{a} = {x2}", f"{pad}{b} = {y2}",
              f"{pad}{c} = np.empty({out}, np.{x.dtype.name})"]
    cm = c
    if out != (m, n):  # the product's (m, n) view of the result
        cm = fresh()
        lines.append(f"{pad}{cm} = {c}.reshape(({m}, {n}))")
    blocks = threaded and m * k * n >= blas_parts.THREADED_MACS
    if use == "gemm":
        grid = f"gl.loop_grid(loop_threads, {cm})"
        block = (f"gl.loop_block(loop_gemm, {{q}}, {{rows}}, {{cols}}, {a}, {x_t}, {b}, {y_t}, "
                 f"{cm}, loop_work[numba.get_thread_id()])")  # (the running thread's scratch)
    else:
        grid = f"bp.loop_grid(loop_threads, {runtime_value(m)}, {runtime_value(n)})"
        block = f"bp.loop_block(loop_blas, loop_width, {{q}}, {{rows}}, {{cols}}, {a}, {b}, {cm})"
    if blocks:
        rows, cols, q = fresh(), fresh(), fresh()
        lines += [f"{pad}{rows}, {cols} = {grid}",
                  f"{pad}for {q} in prange({rows} * {cols}):",
                  f"{pad}    " + block.format(q=runtime_value(q), rows=rows, cols=cols)]
    else:
        lines.append(pad + block.format(q=runtime_value(0), rows=runtime_value(1),
                                        cols=runtime_value(1)))
    # (the block's index as an int64 value in every form: a literal 0, a range's int64 and a
    # prange's uint64 compiled the runtime's loop_block three times)
    return Rendered(c, m * k * n, blocks, words)


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


def flat_operand(name: str, eqn: JaxprEqn, which: int) -> tuple[str, bool]:
    """(a C-contiguous flat copy or view of operand `which` (0: x, 1: y) in the element order of
    its product matrix or of that matrix's transpose, whether it is the transpose): numbax's
    GEMM reads either through its strides (gemm_loops.loop_block)."""
    (xc, yc), _ = eqn.params["dimension_numbers"]
    v = eqn.invars[which].aval
    contract = xc if which == 0 else yc
    free = [d for d in range(v.ndim) if d not in contract]
    rows, cols = (free, contract) if which == 0 else (contract, free)  # the matrix's axes
    perm = [*rows, *cols]
    if perm == sorted(perm):
        return f"np.ascontiguousarray({name}).reshape(-1)", False
    if [*cols, *rows] == sorted(perm):  # stored as the matrix's transpose: read so, no copy
        return f"np.ascontiguousarray({name}).reshape(-1)", True
    return f"np.ascontiguousarray({name}.transpose({tuple(perm)})).reshape(-1)", False
