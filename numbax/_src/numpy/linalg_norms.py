"""numbax.numpy.linalg's norms and products (norm, vector_norm, matrix_norm, cross, vecdot,
tensordot, multi_dot, outer, diagonal, trace...): reductions and contractions, no LAPACK
call beyond the singular values the 2-norms need."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import linalg_svd
from numbax._src.numpy import creation, linalg_ops, ufuncs
from numbax._src.numpy import reductions as jred
from numbax._src.numpy import shapes as jshapes
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axis

__all__ = ["norm", "vector_norm", "matrix_norm", "cross", "vecdot", "tensordot", "matmul",
           "multi_dot", "outer", "diagonal", "trace", "matrix_transpose"]


def as_inexact(api: str, x: Any, min_ndim: int = 0) -> Any:
    """x as an array of a float or complex dtype (bool and integers promote like JAX)."""
    x = asarray(x) if isinstance(x, (list, tuple)) else x
    (x,) = ufuncs.promote_dtypes_inexact(f"linalg.{api}", x)
    if get_aval(x).ndim < min_ndim:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.{api}: x has shape {get_aval(x).shape}, expected an array of "
            f"rank >= {min_ndim}. Reshape it.")
    return x


def _abs2(x: Any) -> Any:
    """|x|² as real(x conj(x)) (smooth at 0, as JAX)."""
    if kind_of(get_aval(x).dtype) == "c":
        return ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x)))
    return ufuncs.square(x)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The vector p-norm of x over axis (all axes when None): ord = inf, -inf, 0 or any p.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.vector_norm(jnp.array([3., 4j]))
    Array(5., dtype=float64)
    """
    x = as_inexact("vector_norm", x)
    kw = dict(axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return ufuncs.sqrt(jred.sum(_abs2(x), **kw))
    if isinstance(ord, str):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.vector_norm: ord has {ord!r}, expected a number (use "
            "numbax.numpy.inf, not 'inf').")
    ax = ufuncs.abs(x)
    if ord == np.inf:
        return jred.max(ax, **kw, initial=0)
    if ord == -np.inf:
        return jred.min(ax, **kw)
    if ord == 0:
        return jred.sum(ufuncs.not_equal(x, 0), **kw).astype(get_aval(ax).dtype)
    if ord == 1:
        return jred.sum(ax, **kw)
    p = float(ord)
    return ufuncs.power(jred.sum(ufuncs.power(ax, p), **kw), 1.0 / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """Matrix norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, int], keepdims: bool) -> Any:
    r, c = axes
    if ord in (None, "fro", "f"):
        return ufuncs.sqrt(jred.sum(_abs2(x), axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        sum_axis, red_axis = (r, c) if ord in (1, -1) else (c, r)
        sums = jred.sum(ufuncs.abs(x), axis=sum_axis, keepdims=True)
        if ord in (1, np.inf):
            out = jred.max(sums, axis=red_axis, keepdims=True, initial=0)
        else:
            out = jred.min(sums, axis=red_axis, keepdims=True)
        return out if keepdims else jshapes.squeeze(out, axis=axes)
    if ord in (2, -2, "nuc"):
        moved = jshapes.moveaxis(x, axes, (-2, -1))
        s = linalg_svd.svd(moved, compute_uv=False)
        if ord == 2:
            out = jred.max(s, axis=-1, initial=0)
        else:
            out = jred.min(s, axis=-1) if ord == -2 else jred.sum(s, axis=-1)
        if keepdims:
            out = jshapes.expand_dims(out, builtins.sorted(axes))
        return out
    raise NumbaxValueError(
        f"numbax.numpy.linalg.norm: ord has {ord!r}, expected None, 'fro', 'nuc', 1, -1, 2, -2, "
        "inf or -inf for a matrix norm."
    )


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """numpy.linalg.norm: vector norms over one axis, matrix norms over two.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.norm(jnp.array([3., 4.]))
    Array(5., dtype=float64)
    """
    x = as_inexact("norm", x)
    nd = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return ufuncs.sqrt(jred.sum(_abs2(x), keepdims=keepdims))
        if nd not in (1, 2):
            raise NumbaxValueError(
                f"numbax.numpy.linalg.norm: x has shape {get_aval(x).shape} with ord={ord!r} "
                "and axis=None, expected a 1-d or 2-d x. Pass axis.")
        axis = tuple(range(nd))
    axis = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(canonicalize_axis(a, nd, "linalg.norm") for a in axis)  # order matters
    if len(set(axes)) != len(axes):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.norm: axis has {axis!r}, expected distinct axes.")
    if len(axes) == 1:
        return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise NumbaxValueError(
        f"numbax.numpy.linalg.norm: axis has {axis!r}, expected one or two axes.")


# ----------------------------------------------------------------------------- products


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-vectors along `axis` (the array API's stricter numpy.cross).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.cross(jnp.array([1., 0., 0.]), jnp.array([0., 1., 0.]))
    Array([0., 0., 1.], dtype=float64)
    """
    x1 = asarray(x1) if isinstance(x1, (list, tuple)) else x1
    x2 = asarray(x2) if isinstance(x2, (list, tuple)) else x2
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    try:
        n1, n2 = s1[axis], s2[axis]
    except (IndexError, TypeError):
        n1 = n2 = -1
    if n1 != 3 or n2 != 3:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.cross: x1 has shape {s1} and x2 has shape {s2}, expected "
            f"3-vectors along axis {axis}. Use numbax.numpy.cross for 2-vectors.")
    return linalg_ops.cross(x1, x2, axis=axis)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """sum(conj(x1) * x2) over `axis`, broadcasting the rest."""
    return linalg_ops.vecdot(x1, x2, axis=axis, precision=precision,
                             preferred_element_type=preferred_element_type)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2, precision: Any = None,
              preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """numpy.tensordot with keyword-only axes (the array API's signature)."""
    return linalg_ops.tensordot(x1, x2, axes, precision=precision,
                                preferred_element_type=preferred_element_type)


def matmul(x1: Any, x2: Any, /, *, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """numbax.numpy.matmul under the linalg namespace."""
    return linalg_ops.matmul(x1, x2, precision=precision,
                             preferred_element_type=preferred_element_type)


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two 1-d arrays (numbax.numpy.outer flattens; this one checks)."""
    x1 = asarray(x1) if isinstance(x1, (list, tuple)) else x1
    x2 = asarray(x2) if isinstance(x2, (list, tuple)) else x2
    if get_aval(x1).ndim != 1 or get_aval(x2).ndim != 1:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.outer: x1 has shape {get_aval(x1).shape} and x2 has shape "
            f"{get_aval(x2).shape}, expected two 1-d arrays. Use numbax.numpy.outer to flatten.")
    return linalg_ops.outer(x1, x2)


def multi_dot(arrays: Any, *, precision: Any = None) -> Any:
    """Chained matrix product (the first/last array may be 1-d, as numpy), left to right."""
    arrays = [asarray(a) if isinstance(a, (list, tuple)) else a for a in arrays]
    if len(arrays) < 2:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.multi_dot: arrays has {len(arrays)} arrays, expected at "
            "least 2.")
    shapes = [get_aval(a).shape for a in arrays]
    inner_ok = all(len(s) == 2 for s in shapes[1:-1])
    if not (len(shapes[0]) in (1, 2) and len(shapes[-1]) in (1, 2) and inner_ok):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.multi_dot: arrays have shapes {shapes}, expected 2-d arrays "
            "(the first and last may be 1-d).")
    if any(a[-1] != b[0] for a, b in zip(shapes[:-1], shapes[1:])):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.multi_dot: arrays have shapes {shapes}; each last dimension "
            "must equal the next array's first dimension.")
    out = arrays[0]
    for x in arrays[1:]:
        out = linalg_ops.dot(out, x)
    return out


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The diagonals (offset k) of the last two axes."""
    _check_rank2("diagonal", x)
    return creation.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the diagonals of the last two axes (the array API's linalg.trace)."""
    _check_rank2("trace", x)
    return creation.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def matrix_transpose(x: Any, /) -> Any:
    """Swaps the last two axes."""
    _check_rank2("matrix_transpose", x)
    return jshapes.swapaxes(x, -1, -2)


def _check_rank2(api: str, x: Any) -> None:
    try:
        nd = get_aval(asarray(x) if isinstance(x, (list, tuple)) else x).ndim
    except TypeError as err:
        raise NumbaxTypeError(f"numbax.numpy.linalg.{api}: x has type {type(x).__name__}, "
                              "expected an array.") from err
    if nd < 2:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.{api}: x has {nd} dimensions, expected at least 2 (..., m, n).")
