"""The array-API matrix-vector products (matvec, vecmat) and einsum_path's contraction order."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy.lax_numpy import asarray

__all__ = ["matvec", "vecmat", "einsum_path"]


def _check(api: str, mat: Any, vec: Any, mat_arg: str, vec_arg: str, contract: int) -> None:
    ms, vs = get_aval(mat).shape, get_aval(vec).shape
    if len(ms) < 2 or len(vs) < 1:
        raise NumbaxValueError(f"numbax.numpy.{api}: {mat_arg} has shape {ms} and {vec_arg} has "
                               f"shape {vs}, expected a (..., m, n) matrix and a (..., n) "
                               "vector.")
    if ms[contract] != vs[-1]:
        raise NumbaxValueError(f"numbax.numpy.{api}: {mat_arg} has shape {ms} and {vec_arg} has "
                               f"shape {vs}; the contracted sizes {ms[contract]} and {vs[-1]} "
                               "differ.")


def matvec(x1: Any, x2: Any, /) -> Any:
    """numpy.matvec: the matrix-vector product over the last axes, batch axes broadcast.

    >>> matvec(asarray([[1.0, 2.0], [3.0, 4.0]]), asarray([1.0, 1.0]))
    Array([3., 7.], dtype=float64)
    """
    from numbax._src.numpy.linalg_ops import matmul

    x1, x2 = asarray(x1), asarray(x2)
    _check("matvec", x1, x2, "x1", "x2", -1)
    col = shape_ops.reshape(x2, get_aval(x2).shape + (1,))
    out = matmul(x1, col)
    return shape_ops.squeeze(out, (get_aval(out).ndim - 1,))


def vecmat(x1: Any, x2: Any, /) -> Any:
    """numpy.vecmat: conj(x1) @ x2 for a vector x1 and a matrix x2, batch axes broadcast.

    >>> vecmat(asarray([1.0, 1.0]), asarray([[1.0, 2.0], [3.0, 4.0]]))
    Array([4., 6.], dtype=float64)
    """
    from numbax._src.numpy.linalg_ops import matmul

    x1, x2 = asarray(x1), asarray(x2)
    _check("vecmat", x2, x1, "x2", "x1", -2)
    if kind_of(get_aval(x1).dtype) == "c":
        x1 = lax.conj(x1)
    row = shape_ops.reshape(x1, get_aval(x1).shape[:-1] + (1, get_aval(x1).shape[-1]))
    out = matmul(row, x2)
    return shape_ops.squeeze(out, (get_aval(out).ndim - 2,))


def einsum_path(subscripts: str, /, *operands: Any,
                optimize: bool | str | list = "auto") -> tuple[list, Any]:
    """numpy.einsum_path: a pairwise contraction order for einsum, and a printable report.

    The order is numpy's path search (einsum_path with 'greedy' or 'optimal'; JAX's 'auto'
    picks 'optimal' up to four operands, then 'greedy') run on the operands' shapes only.

    Returns:
      (path, report): path is a list of operand-position tuples as in JAX (without numpy's
      leading 'einsum_path' marker); report is numpy's text.
    """
    if not isinstance(subscripts, str):
        raise NumbaxTypeError(f"numbax.numpy.einsum_path: subscripts has type "
                              f"{type(subscripts).__name__}, expected a string such as "
                              "'ij,jk->ik'.")
    shapes = [get_aval(asarray(x)).shape for x in operands]
    dummies = [np.broadcast_to(np.zeros((), np.float64), s) for s in shapes]
    if optimize is False:
        return [tuple(range(len(operands)))], None
    if optimize is True or optimize == "auto":
        optimize = "optimal" if len(operands) <= 4 else "greedy"
    if isinstance(optimize, str) and optimize not in ("greedy", "optimal"):
        raise NumbaxValueError(f"numbax.numpy.einsum_path: optimize is {optimize!r}, expected "
                               "'auto', 'greedy', 'optimal', a bool or an explicit path.")
    if isinstance(optimize, (list, tuple)):
        optimize = ["einsum_path", *[tuple(p) for p in optimize if p != "einsum_path"]]
    try:
        path, report = np.einsum_path(subscripts, *dummies, optimize=optimize)
    except ValueError as e:
        raise NumbaxValueError(f"numbax.numpy.einsum_path: {e}") from None
    return [tuple(p) for p in path[1:]], report
