"""sort: multi-operand sort along one dimension by the first num_keys operands, and top_k."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import along_axis
from numbax._src.lax import elementwise as ew

sort_p = Primitive("sort", multiple_results=True)


def _sort_abstract_eval(*operands: ShapedArray, dimension, is_stable, num_keys) -> list:
    if not operands:
        raise NumbaxTypeError("lax.sort: operand is empty, expected at least one array.")
    shape = operands[0].shape
    for i, a in enumerate(operands):
        if a.shape != shape:
            listed = ", ".join(str(o.shape) for o in operands)
            raise NumbaxValueError(
                f"lax.sort: operand {i} has shape {a.shape}, expected all operands to share "
                f"one shape (got {listed})."
            )
        ew._check_kind("sort", a, "biufc", i)
    if not 0 <= dimension < len(shape):
        raise NumbaxValueError(
            f"lax.sort: dimension {dimension} is out of bounds for an array of shape {shape}."
        )
    if not 1 <= num_keys <= len(operands):
        raise NumbaxValueError(
            f"lax.sort: num_keys is {num_keys}, expected 1 <= num_keys <= {len(operands)} "
            "(the number of operands)."
        )
    return list(operands)


def _sort_permutation(keys: Sequence[np.ndarray], dimension: int) -> np.ndarray:
    """Stable lexicographic order of `keys` along `dimension`; NaNs sort last (numpy's)."""
    if len(keys) == 1:
        return np.argsort(keys[0], axis=dimension, kind="stable")
    return np.lexsort(tuple(keys[::-1]), axis=dimension)


def _sort_impl(*operands, dimension, is_stable, num_keys):
    perm = _sort_permutation(operands[:num_keys], dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in operands]


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    # Sort an iota alongside; tangents follow the values through the same permutation.
    shape = get_aval(primals[0]).shape
    index_dtype = dtypes.canonicalize_dtype(np.int64)
    iota = np.broadcast_to(along_axis.iota_along(shape, dimension, index_dtype), shape)
    *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                              num_keys=num_keys)
    tangents_out = [
        t if type(t) is ad.Zero else along_axis.take_along_axis(t, perm, dimension)
        for t in tangents
    ]
    return outs, tangents_out


def _sort_batch(axis_size, vals, dims, *, dimension, is_stable, num_keys):
    operands = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]
    outs = sort_p.bind(*operands, dimension=dimension + 1, is_stable=is_stable,
                       num_keys=num_keys)
    return outs, [0] * len(outs)


core.abstract_eval_rules[sort_p] = _sort_abstract_eval
core.impl_rules[sort_p] = _sort_impl
ad.jvp_rules[sort_p] = _sort_jvp
batching.batch_rules[sort_p] = _sort_batch


def _canonical_dimension(api: str, shape: tuple[int, ...], dimension: int) -> int:
    ndim = len(shape)
    if not -ndim <= int(dimension) < ndim:
        raise NumbaxValueError(
            f"lax.{api}: dimension {dimension} is out of bounds for an array of shape {shape}. "
            f"Pass a dimension in [-{ndim}, {ndim})."
        )
    return int(dimension) % ndim


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sorts along `dimension`; a tuple of operands is sorted by its first num_keys entries.

    Args:
      operand: an array, or a tuple of arrays of one shape.
      dimension: the dimension to sort along.
      is_stable: accepted for JAX compatibility; numbax's sort is always stable.
      num_keys: how many leading operands are the (lexicographic) keys.

    Returns:
      The sorted array, or a tuple of sorted arrays. NaNs sort last, as in numpy.

    >>> import numpy as np
    >>> sort(np.array([3., 1., 2.]))
    Array([1., 2., 3.], dtype=float64)
    """
    if isinstance(operand, (tuple, list)):
        if not operand:
            raise NumbaxTypeError("lax.sort: operand is empty, expected at least one array.")
        dim = _canonical_dimension("sort", get_aval(operand[0]).shape, dimension)
        return tuple(sort_p.bind(*operand, dimension=dim, is_stable=bool(is_stable),
                                 num_keys=int(num_keys)))
    if int(num_keys) != 1:
        raise NumbaxValueError(
            f"lax.sort: num_keys is {num_keys} with a single operand, expected 1."
        )
    dim = _canonical_dimension("sort", get_aval(operand).shape, dimension)
    return sort_p.bind(operand, dimension=dim, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1,
                 is_stable: bool = True) -> tuple[Any, Any]:
    """Sorts keys along `dimension` and permutes values the same way."""
    dim = _canonical_dimension("sort_key_val", get_aval(keys).shape, dimension)
    k, v = sort_p.bind(keys, values, dimension=dim, is_stable=bool(is_stable), num_keys=1)
    return k, v


def top_k(operand: Any, k: int) -> tuple[Any, Any]:
    """The k largest entries along the last axis, largest first, and their int32 indices
    (lower index first on ties; NaN counts as largest)."""
    aval = get_aval(operand)
    if aval.ndim == 0 or not 0 <= int(k) <= aval.shape[-1]:
        raise NumbaxValueError(
            f"lax.top_k: operand has shape {aval.shape} and k is {k}, expected rank >= 1 and "
            "0 <= k <= operand.shape[-1]."
        )
    last = aval.ndim - 1
    n = aval.shape[-1]
    iota = np.broadcast_to(along_axis.iota_along(aval.shape, last, np.int32), aval.shape)
    # Ascending by (value, -index), read from the end: descending values, lower index first.
    _, neg_index, values = sort_p.bind(operand, -iota, operand, dimension=last,
                                       is_stable=True, num_keys=2)
    pick = np.arange(n - 1, n - 1 - int(k), -1).reshape((1,) * last + (int(k),))
    top_values = along_axis.take_along_axis(values, pick, last)
    top_index = ew.neg(along_axis.take_along_axis(neg_index, pick, last))
    return top_values, top_index
