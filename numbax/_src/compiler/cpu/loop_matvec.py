"""Matrix-vector products inside compiled control flow (cpu/control_flow.py): BLAS's gemv
writing into the loop's own buffer, and, where the matrix is large enough to pay for threads,
gemv on row blocks of it in a prange on the loop's threads (runtime/matvec.py).

They were Numba's np.dot of an (m, k) by (k, 1) matrix, a GEMM that allocated its result each
step. 200 steps of least-squares descent over a 1000 x 200 float32 matrix (`x - 0.1 *
grad(sum((a @ x - b) ** 2))`: a @ x, then r @ a) took 22 us a step on one core of the 16-core
Xeon and 16.5-22 on the 2-core VM, against jax.jit's 18.5 and 15. With gemv into a buffer
the step took 21.6 and 19; on row blocks, the Xeon's 4 threads 15.2 and the VM's 2 threads
12.9 (docs/performance.md). A matrix's blocks are worth threads from the same estimate as a
loop nest's: its bytes streamed once at `work.NS_PER_BYTE` (a 200 x 200 matrix, 16 us
estimated, stays serial: its blocks took 1.5-3x its one-thread time). Matrices of at most
`matvec.SMALL_ELEMENTS` are plain loops, where a BLAS call costs more than the product (an
RNN's 32 x 32 over one sequence; products of at most 256 multiply-adds over at most 16
elements never get here: passes.expand_small_dots makes them sums of products).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from numbax._src.compiler.cpu import loop_products, work
from numbax._src.compiler.cpu.runtime import matvec, threads
from numbax._src.core import JaxprEqn


class Product(NamedTuple):
    """A matrix-vector product as `s @ v` (`rows`) or `v @ s` (not `rows`), s a C-contiguous
    (r, c) matrix."""
    matrix: str   # s's expression
    shape: tuple[int, int]
    vector: str   # v's expression, a flat C-contiguous vector
    rows: bool


def product(eqn: JaxprEqn, ins: list[str]) -> Product | None:
    """The float32/float64 product `eqn` as a matrix-vector product (every operand and the
    result of one dtype, no batch dims, one free side a vector of one element, the other at
    least 2, k at least 2), or None."""
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    x, y = (v.aval for v in eqn.invars[:2])
    out = eqn.outvars[0].aval
    if xb or yb or not x.dtype == y.dtype == out.dtype or \
            x.dtype not in (np.float32, np.float64):
        return None
    xf = [d for d in range(x.ndim) if d not in xc]
    yf = [d for d in range(y.ndim) if d not in yc]
    m, n = (int(np.prod([a.shape[d] for d in f], dtype=np.int64)) for a, f in ((x, xf), (y, yf)))
    k = int(np.prod([x.shape[d] for d in xc], dtype=np.int64))
    if k < 2 or (m == 1) == (n == 1) or max(m, n) < 2:
        return None
    which = 0 if n == 1 else 1  # the matrix operand: x (a @ v) or y (v @ a)
    flat, stored_t = loop_products.flat_operand(ins[which], eqn, which)
    side = max(m, n)
    # x stored (m, k) is s @ v, stored (k, m) v @ s; y stored (k, n) is v @ s, (n, k) s @ v
    rows = stored_t == (which == 1)
    shape = (side, k) if rows else (k, side)
    vec = 1 - which
    contract = (xc, yc)[vec]
    a = eqn.invars[vec].aval
    order = [d for d in contract if a.shape[d] > 1]  # the vector's elements in k's order
    vector = ins[vec]
    if order != sorted(order):  # (its other axes have one element)
        perm = (*contract, *(d for d in range(a.ndim) if d not in contract))
        vector = f"{vector}.transpose({perm})"
    return Product(f"{flat}.reshape({shape})", shape,
                   f"np.ascontiguousarray({vector}).reshape(({k},))", rows)


def work_ns(p: Product, itemsize: int) -> float:
    """The product's estimated serial time: its matrix streamed once."""
    return p.shape[0] * p.shape[1] * itemsize * work.NS_PER_BYTE


def render(p: Product, out: str, out_shape: tuple, itemsize: int, fresh: Callable[[], str],
           scratch: Callable[[str, str], None], lines: list[str], pad: str,
           threaded: bool) -> bool:
    """Appends the lines writing the product into the array `out` (of `out_shape`);
    `scratch(name, shape)` allocates a buffer of the result's dtype for the loop. Where
    `threaded` and the matrix pays for threads, the gemv calls are the iterations of a prange
    over row blocks of the kernel's `loop_threads`; returns whether they are."""
    s, v = fresh(), fresh()
    lines += [f"{pad}{s} = {p.matrix}", f"{pad}{v} = {p.vector}"]
    flat = out
    if len(out_shape) != 1:
        flat = fresh()
        lines.append(f"{pad}{flat} = {out}.reshape(({p.shape[0 if p.rows else 1]},))")
    blocks = threaded and work_ns(p, itemsize) >= threads.PARALLEL_MIN_NS
    if not blocks and p.shape[0] * p.shape[1] <= matvec.SMALL_ELEMENTS:  # loops, not BLAS
        lines.append(f"{pad}mv.rows_small({s}, {v}, {flat})" if p.rows else
                     f"{pad}mv.parts_small({v}, {s}, {flat})")
        return False
    if not blocks:
        call = f"np.dot({s}, {v}, {flat})" if p.rows else f"np.dot({v}, {s}, {flat})"
        lines.append(pad + call)
        return False
    count, q = fresh(), fresh()
    lines.append(f"{pad}{count} = mv.block_count({p.shape[0]}, loop_threads)")
    if p.rows:
        lines += [f"{pad}for {q} in prange({count}):",
                  f"{pad}    mv.rows_block({s}, {v}, {flat}, {q}, {count})"]
        return True
    parts = fresh()  # one partial result a thread, summed in block order
    scratch(parts, f"(loop_threads, {p.shape[1]})")
    lines += [f"{pad}for {q} in prange({count}):",
              f"{pad}    mv.part_block({v}, {s}, {parts}[{q}], {q}, {count})",
              f"{pad}mv.add_parts({parts}, {count}, {flat})"]
    return True
