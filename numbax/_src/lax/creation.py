"""Array constructors and shape arithmetic on lax: full_like, empty, broadcast_like,
broadcast_shapes, broadcast_to_rank, shape_as_value, padtype_to_pads (compositions only)."""
from __future__ import annotations

import enum
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops


def _shape_of(api: str, x: Any) -> tuple[int, ...]:
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    return tuple(int(d) for d in shape)


def _dtype_of(x: Any) -> np.dtype:
    dtype = getattr(x, "dtype", None)
    return get_aval(x).dtype if dtype is None else np.dtype(dtype)


def _canonical_shape(api: str, shape: Any) -> tuple[int, ...]:
    shape = (shape,) if np.ndim(shape) == 0 and not isinstance(shape, (tuple, list)) else shape
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError as err:
        raise NumbaxTypeError(
            f"{api}: shape has {shape!r}, expected a sequence of integers.") from err
    if any(d < 0 for d in dims):
        raise NumbaxValueError(f"{api}: shape has {dims}, expected non-negative sizes.")
    return dims


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None,
              sharding: Any = None) -> Any:
    """An array like `x` (its shape and dtype unless given) filled with `fill_value`.

    Args:
      x: an array, or anything with `.shape` and `.dtype` (a ShapeDtypeStruct).
      fill_value: a scalar.
      dtype: the output dtype (default: x's, keeping x's weak type).
      shape: the output shape (default: x's).
      sharding: accepted for JAX compatibility; numbax arrays live on one device.

    Returns:
      The filled array.

    >>> import numpy as np
    >>> full_like(np.zeros((2,), np.float32), 3)
    Array([3., 3.], dtype=float32)
    """
    fill_shape = _shape_of("lax.full_like", x) if shape is None else _canonical_shape(
        "lax.full_like", shape)
    weak_type = dtype is None and bool(getattr(x, "weak_type", False) or isinstance(
        x, (bool, int, float, complex)) and not isinstance(x, np.generic))
    out_dtype = _dtype_of(x) if dtype is None else dtypes.canonicalize_dtype(
        dtype, context="lax.full_like")
    return shape_ops.full(fill_shape, fill_value, out_dtype, weak_type=weak_type)


def empty(shape: Any, dtype: Any, *, out_sharding: Any = None) -> Any:
    """An array of `shape` and `dtype` whose contents the program must not rely on.

    Unlike JAX (whose buffer is uninitialised), numbax's is filled with zeros.

    >>> empty((2,), "int32").shape
    (2,)
    """
    dtype = dtypes.canonicalize_dtype(dtype, context="lax.empty")
    return shape_ops.full(_canonical_shape("lax.empty", shape), 0, dtype)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape numpy broadcasting gives arrays of `shapes` (ValueError when they clash).

    >>> broadcast_shapes((3, 1), (1, 4), (5, 1, 1))
    (5, 3, 4)
    """
    if not shapes:
        return ()
    canon = [_canonical_shape("lax.broadcast_shapes", s) for s in shapes]
    ndim = max(len(s) for s in canon)
    padded = [(1,) * (ndim - len(s)) + s for s in canon]
    out = []
    for sizes in zip(*padded, strict=True):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise NumbaxValueError(
                f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in canon]}. "
                "Each dimension must be equal or 1 across the shapes.")
        out.append(big.pop() if big else 1)
    return tuple(out)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """x with leading dimensions of size 1 added until it has rank `rank`.

    >>> broadcast_to_rank(np.ones(3), 3).shape
    (1, 1, 3)
    """
    ndim = get_aval(x).ndim
    rank = operator.index(rank)
    if rank < ndim:
        raise NumbaxValueError(
            f"lax.broadcast_to_rank: x has rank {ndim}, expected a rank >= {ndim}; got {rank}.")
    if rank == ndim:
        return x
    return shape_ops.broadcast(x, (1,) * (rank - ndim))


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """`arr` broadcast (numpy rules) to the shape of `like_arr`.

    >>> broadcast_like(np.array([1, 2, 3]), np.zeros((2, 3))).shape
    (2, 3)
    """
    target = _shape_of("lax.broadcast_like", like_arr)
    aval = get_aval(arr)
    lead = len(target) - aval.ndim
    if lead < 0 or any(d not in (1, t) for d, t in zip(aval.shape, target[lead:])):
        raise NumbaxValueError(
            f"lax.broadcast_like: arr has shape {aval.shape}, which does not broadcast to "
            f"like_arr's shape {target}.")
    keep = [i for i, d in enumerate(aval.shape) if d == target[lead + i]]
    squeezed = shape_ops.reshape(arr, tuple(aval.shape[i] for i in keep)) if len(
        keep) != aval.ndim else arr
    return shape_ops.broadcast_in_dim(squeezed, target, tuple(lead + i for i in keep))


def shape_as_value(shape: Sequence[int]) -> Any:
    """A shape as a 1-d integer array (int64 when a size needs it, else int32).

    >>> shape_as_value((2, 3))
    array([2, 3], dtype=int32)
    """
    dims = _canonical_shape("lax.shape_as_value", shape)
    dtype = np.int64 if any(d > np.iinfo(np.int32).max for d in dims) else np.int32
    return np.asarray(dims, dtype=dtype).reshape((len(dims),))


class PaddingType(enum.Enum):
    VALID = 1
    SAME = 2
    SAME_LOWER = 3


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str | PaddingType
                    ) -> list[tuple[int, int]]:
    """(low, high) padding per spatial dimension for 'VALID', 'SAME' or 'SAME_LOWER'.

    'SAME' pads so the output size is ceil(in / stride), the odd extra element at the end;
    'SAME_LOWER' puts it at the start; 'VALID' pads nothing.

    >>> padtype_to_pads((5,), (3,), (2,), "SAME")
    [(1, 1)]
    """
    if isinstance(padding, str):
        try:
            padding = PaddingType[padding.upper()]
        except KeyError as err:
            # RuntimeError is the class JAX raises here.
            raise RuntimeError(
                f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got "
                f"{padding}. Pass one of those or explicit (low, high) pairs as padding."
            ) from err
    if not isinstance(padding, PaddingType):
        raise NumbaxTypeError(
            f"lax.padtype_to_pads: padding has {padding!r}, expected 'VALID', 'SAME' or "
            "'SAME_LOWER'.")
    if padding is PaddingType.VALID:
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides, strict=True):
        out = -(-int(n) // int(s))
        total = max((out - 1) * int(s) + int(w) - int(n), 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if padding is PaddingType.SAME else (big, small))
    return pads


def dtype(x: Any) -> np.dtype:
    """The dtype numbax gives x (canonicalised: Python scalars take the default dtypes).

    >>> dtype(1.0)
    dtype('float64')
    """
    if isinstance(x, (str, type, np.dtype)):
        return dtypes.canonicalize_dtype(x, context="lax.dtype")
    return get_aval(x).dtype


def reciprocal(x: Any) -> Any:
    """Elementwise 1 / x (lax.integer_pow(x, -1)).

    >>> reciprocal(np.array([2.0, 4.0]))
    Array([0.5 , 0.25], dtype=float64)
    """
    return ew.integer_pow(x, -1)

