"""sort: multi-operand sort along one dimension by the first num_keys operands, and top_k."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.eager_compile import compiled_when_eager
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


# ----------------------------------------------------------------------------- top_k


def _descending_order(x: np.ndarray, axis: int) -> np.ndarray:
    """Indices of x along axis by decreasing value, lower index first on ties, NaN first:
    a stable ascending sort of the reversed array, read backwards."""
    n = x.shape[axis]
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(order, axis)


def _top_k_shape(api: str, x: ShapedArray, k: int, axis: int) -> tuple[int, ...]:
    if x.ndim == 0:
        raise NumbaxValueError(f"{api}: operand is a scalar, expected rank >= 1.")
    if k < 0:
        raise NumbaxValueError(f"k argument to top_k must be nonnegative, got {k}")
    if k > x.shape[axis]:
        raise NumbaxValueError(
            f"k argument to top_k must be no larger than size along axis; got k={k} with "
            f"shape={list(x.shape)} and axis={axis}")
    return (*x.shape[:axis], k, *x.shape[axis + 1:])


def _take_top(x: np.ndarray, order: np.ndarray, k: int, axis: int) -> list[np.ndarray]:
    index = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, index, axis=axis), index.astype(np.int32)]


def _top_tangents(primals, tangents, outs, axis):
    (t,) = tangents
    if type(t) is ad.Zero:
        return [ad.Zero(ad.tangent_aval(get_aval(outs[0]))), ad.Zero(ad.tangent_aval(
            get_aval(outs[1])))]
    return [along_axis.take_along_axis(t, outs[1], axis),
            ad.Zero(ad.tangent_aval(get_aval(outs[1])))]


top_k_p = Primitive("top_k", multiple_results=True)


def _top_k_abstract_eval(x: ShapedArray, *, k, axis) -> list:
    ew._check_kind("top_k", x, "biuf")
    shape = _top_k_shape("lax.top_k", x, k, axis)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.int32)]


def _top_k_jvp(primals, tangents, *, k, axis):
    outs = top_k_p.bind(*primals, axis=axis, k=k)
    return outs, _top_tangents(primals, tangents, outs, axis)


def _top_k_batch(axis_size, vals, dims, *, k, axis):
    (x,), (d,) = vals, dims
    outs = top_k_p.bind(x, axis=axis + (d <= axis), k=k)
    return outs, [d, d]


core.abstract_eval_rules[top_k_p] = _top_k_abstract_eval
core.impl_rules[top_k_p] = lambda x, *, k, axis: _take_top(x, _descending_order(x, axis), k,
                                                             axis)
ad.jvp_rules[top_k_p] = _top_k_jvp
batching.batch_rules[top_k_p] = _top_k_batch


@compiled_when_eager  # (JAX runs its compiled top_k eagerly too)
def lax_top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The k largest entries along `axis`, largest first, and their int32 indices (lower
    index first on ties; NaN counts as largest).

    >>> top_k(np.array([3.0, 1.0, 3.0, 7.0]), 2)
    (Array([7., 3.], dtype=float64), Array([3, 0], dtype=int32))
    """
    aval = get_aval(operand)
    if aval.ndim == 0:
        raise NumbaxValueError("lax.top_k: operand is a scalar, expected rank >= 1.")
    axis = _canonical_dimension("top_k", aval.shape, axis)
    return tuple(top_k_p.bind(operand, axis=axis, k=operator.index(k)))  # JAX's print order


def top_k(operand: Any, k: int) -> tuple[Any, Any]:
    """lax_top_k along the last axis as a sort (numbax's library code calls this: the sort
    compiles under jit, where top_k_p has no lowering yet)."""
    aval = get_aval(operand)
    if aval.dtype.kind == "c":
        raise NumbaxValueError(f"lax.top_k: operand has dtype {aval.dtype}; top_k does not "
                               "order complex values. Pass their real part or abs.")
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


approx_top_k_p = Primitive("approx_top_k", multiple_results=True)


def _approx_axis(x: ShapedArray, reduction_dimension: int) -> int:
    return _canonical_dimension("approx_max_k", x.shape, reduction_dimension)


def _approx_abstract_eval(x: ShapedArray, *, k, reduction_dimension, recall_target, is_max_k,
                          reduction_input_size_override, aggregate_to_topk) -> list:
    ew._check_kind("approx_max_k", x, "biuf")
    shape = _top_k_shape("lax.approx_max_k", x, k, _approx_axis(x, reduction_dimension))
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.int32)]


def _approx_impl(x, *, k, reduction_dimension, is_max_k, **params):
    axis = reduction_dimension % x.ndim
    order = (_descending_order(x, axis) if is_max_k
             else np.argsort(x, axis=axis, kind="stable"))
    return _take_top(x, order, k, axis)


def _approx_jvp(primals, tangents, **params):
    outs = approx_top_k_p.bind(*primals, **params)
    axis = params["reduction_dimension"] % get_aval(primals[0]).ndim
    return outs, _top_tangents(primals, tangents, outs, axis)


def _approx_batch(axis_size, vals, dims, *, reduction_dimension, **params):
    x = batching.bdim_at_front(vals[0], dims[0], axis_size)
    dim = reduction_dimension if reduction_dimension < 0 else reduction_dimension + 1
    return approx_top_k_p.bind(x, reduction_dimension=dim, **params), [0, 0]


core.abstract_eval_rules[approx_top_k_p] = _approx_abstract_eval
core.impl_rules[approx_top_k_p] = _approx_impl
ad.jvp_rules[approx_top_k_p] = _approx_jvp
batching.batch_rules[approx_top_k_p] = _approx_batch


def _approx_k(is_max_k: bool) -> Any:
    def fn(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
           reduction_input_size_override: int = -1,
           aggregate_to_topk: bool = True) -> tuple[Any, Any]:
        return tuple(approx_top_k_p.bind(  # params in JAX's (sorted) print order
            operand, aggregate_to_topk=bool(aggregate_to_topk), is_max_k=is_max_k,
            k=operator.index(k), recall_target=float(recall_target),
            reduction_dimension=operator.index(reduction_dimension),
            reduction_input_size_override=operator.index(reduction_input_size_override)))

    which = "largest" if is_max_k else "smallest"
    fn.__name__ = "approx_max_k" if is_max_k else "approx_min_k"
    fn.__doc__ = (
        f"The k {which} entries along reduction_dimension and their int32 indices.\n\n"
        "Unlike JAX on TPU (an approximation meeting recall_target), numbax returns the exact "
        "top k, sorted, whatever aggregate_to_topk (XLA's CPU backend is exact as well).")
    return fn


approx_max_k = _approx_k(True)
approx_min_k = _approx_k(False)


# ----------------------------------------------------------------------------- searchsorted
# numpy.searchsorted of real values: a of shape (*batch, n), each row sorted, v of shape
# (*batch, *values), a binary search per value in its row (NaN largest, -0.0 == 0.0).
# (jnp.searchsorted had counted every entry of `a` for every value: 1e6 values in 1e5 entries
# took 20 s.) Internal: jnp.searchsorted binds it with a 1-d `a`, vmap adds batch dims;
# complex values keep the counting form.
searchsorted_p = Primitive("searchsorted")


def _searchsorted_abstract_eval(a: ShapedArray, v: ShapedArray, *, right, index_dtype):
    return [ShapedArray(v.shape, index_dtype)]


def _searchsorted_impl(a, v, *, right, index_dtype):
    a, v = np.asarray(a), np.asarray(v)
    rows = int(np.prod(a.shape[:-1]))
    a2, v2 = a.reshape(rows, a.shape[-1]), v.reshape(rows, -1)
    side = "right" if right else "left"
    found = [np.searchsorted(a2[r], v2[r], side=side) for r in range(rows)]
    return [np.asarray(found, dtype=index_dtype).reshape(v.shape)]


def _searchsorted_batch(axis_size, vals, dims, *, right, index_dtype):
    (a, v), (da, dv) = vals, dims
    if da is None and get_aval(a).ndim == 1:  # one table for every example: no batch dim
        return [searchsorted_p.bind(a, v, right=right, index_dtype=index_dtype)], [dv]
    a, v = batching.bdim_at_front(a, da, axis_size), batching.bdim_at_front(v, dv, axis_size)
    return [searchsorted_p.bind(a, v, right=right, index_dtype=index_dtype)], [0]


core.abstract_eval_rules[searchsorted_p] = _searchsorted_abstract_eval
core.impl_rules[searchsorted_p] = _searchsorted_impl
batching.batch_rules[searchsorted_p] = _searchsorted_batch
ad.non_differentiable.add(searchsorted_p)
