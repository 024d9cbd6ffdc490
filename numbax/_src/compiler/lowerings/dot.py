"""Lowerings of dot_general (lax/dot.py): a matrix product in the CPU driver (numbax's GEMM or
BLAS, cpu/runtime/library.py), numpy's dot inside compiled control flow, and the tiled matmul
kernel on CUDA."""
from __future__ import annotations

import math

import numpy as np

from numbax._src.compiler import epilogues
from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.cuda.runtime import cublaslt
from numbax._src.compiler.lowerings.forms import Unsupported
from numbax._src.compiler.registry import register
from numbax._src.compiler.source import render_value
from numbax._src.core import JaxprEqn
from numbax._src.lax import dot as ld


def _library(eqn: JaxprEqn, ins: list[str]) -> str:
    plain = _plain_matmul(eqn, ins)
    if plain is not None:
        return plain
    dims = render_value(eqn.params["dimension_numbers"])
    dtype = render_value(eqn.outvars[0].aval.dtype)
    return f"lw.dot_general({ins[0]}, {ins[1]}, {dims}, {dtype})"


def _plain_matmul(eqn: JaxprEqn, ins: list[str]) -> str | None:
    """`[lw.dot(x, y, macs)]` for a float product of matrices/vectors without batch dims or
    casts: the layout work of `dot_general` (5 us a call, a third of a small jitted program)
    is done here, once; a contraction over a matrix's other axis passes its `.T` view."""
    args = _dot_args(eqn, ins)
    return None if args is None else f"[lw.dot({args})]"


def _dot_args(eqn: JaxprEqn, ins: list[str]) -> str | None:
    """`x, y, macs` of `lw.dot` for `_plain_matmul`'s products (None for others)."""
    x, y = (v.aval for v in eqn.invars[:2])
    out = eqn.outvars[0].aval
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    if xb or yb or len(xc) != 1 or x.ndim > 2 or y.ndim > 2 or x.ndim + y.ndim < 3:
        return None
    if not (x.dtype == y.dtype == out.dtype) or out.dtype.kind not in "fc":
        return None
    xs = ins[0] if xc[0] == x.ndim - 1 else f"{ins[0]}.T"
    ys = ins[1] if yc[0] == 0 else f"{ins[1]}.T"
    k = x.shape[xc[0]]
    macs = math.prod(x.shape) * math.prod(y.shape) // k if k else 0
    return f"{xs}, {ys}, {macs}"


def _epilogue_library(eqn: JaxprEqn, ins: list[str]) -> str:
    """A dense layer (compiler/epilogues.py) as one `lw.dot` with its bias and activation."""
    args = _dot_args(eqn, ins)
    return f"[lw.dot({args}, {ins[2]}, {eqn.params['activation']!r})]"


def _array(args, eqn):
    """np.dot of the operands reshaped to (m, k) @ (k, n): float products without batch dims."""
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    x, y = eqn.invars[0].aval, eqn.invars[1].aval
    out = eqn.outvars[0].aval
    if xb or yb or x.ndim == 0 or y.ndim == 0 or out.dtype.kind not in "fc":
        raise Unsupported("dot_general")
    if x.dtype != out.dtype or y.dtype != out.dtype:
        raise Unsupported("dot_general")
    xf = [d for d in range(x.ndim) if d not in xc]
    yf = [d for d in range(y.ndim) if d not in yc]
    k = int(np.prod([x.shape[d] for d in xc], dtype=np.int64))
    m = int(np.prod([x.shape[d] for d in xf], dtype=np.int64))
    n = int(np.prod([y.shape[d] for d in yf], dtype=np.int64))
    x2 = _as_matrix(args[0], x.shape, [*xf, *xc], (m, k))
    y2 = _as_matrix(args[1], y.shape, [*yc, *yf], (k, n))
    if out.ndim == 0:
        return f"np.dot({x2}, {y2})[0, 0]"
    if out.shape == (m, n):
        return f"np.dot({x2}, {y2})"
    return f"np.dot({x2}, {y2}).reshape({out.shape})"


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


register(ld.dot_general_p, backend="cpu", library=_library, array=_array)
register(ld.dot_general_p, backend="cuda", library=cuda_driver.CudaDriver.dot_general)
# gemm_epilogue is the backends' own rewrite (compiler/epilogues.py); bound by hand on operands
# a backend's product does not take (float16 on the CPU; float64, or a GPU without cuBLASLt),
# it runs eagerly on the host
register(epilogues.gemm_epilogue_p, backend="cpu", library=_epilogue_library,
         library_ok=epilogues.cpu_takes)
register(epilogues.gemm_epilogue_p, backend="cuda", library=cuda_driver.CudaDriver.gemm_epilogue,
         library_ok=lambda eqn: cublaslt.available() and cublaslt.takes(eqn))
