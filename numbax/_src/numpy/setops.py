"""numpy's set operations (unique and its array-API forms, isin, union1d, intersect1d,
setdiff1d, setxor1d). Each is one traceable algorithm on a stable sort: with JAX's static
`size=` it runs under jit; without it the input must be concrete and size is its count."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from numbax._src import core, dtypes
from numbax._src.array import asarray_value
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import KeyArrayBase, refuses_keys
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axis, static_int, where
from numbax._src.numpy.sorting import _lax_sort, compact

__all__ = [
    "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all", "isin",
    "union1d", "intersect1d", "setdiff1d", "setxor1d",
]

_INT = np.int64


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _iota(n: int) -> Any:
    return asarray_value(np.arange(n, dtype=_INT))


def _is_abstract(x: Any) -> bool:
    return isinstance(x, core.Tracer) and x.to_concrete_value() is None


def _check(api: str, x: Any, arg: str = "ar") -> Any:
    x = asarray(x)
    if kind_of(get_aval(x).dtype) not in "biufc":
        raise NumbaxTypeError(f"numbax.numpy.{api}: {arg} has dtype {get_aval(x).dtype}, "
                              "expected a numeric or boolean dtype.")
    return x


def _static_size(api: str, size: Any) -> int | None:
    if size is None:
        return None
    size = static_int(size, api, "size")
    if size < 0:
        raise NumbaxValueError(f"numbax.numpy.{api}: size is {size}, expected size >= 0.")
    return size


def _resolve_size(api: str, size: int | None, count: Any, *operands: Any) -> int:
    """size, or (for concrete operands) the data-dependent count it defaults to."""
    if size is not None:
        return size
    for x in operands:
        if _is_abstract(x):
            core.concrete_or_error(x, f"numbax.numpy.{api} (the output size depends on the "
                                      "values: pass a static size= to trace it)")
    return int(np.asarray(count.to_concrete_value() if isinstance(count, core.Tracer)
                          else count))


class _Groups(NamedTuple):
    """Rows sorted with invalid rows last, and their groups of equal rows."""

    rows: Any  # (n, k) sorted rows
    perm: Any  # original position of each sorted row
    valid: Any  # (n,) bool, sorted
    first: Any  # (n,) bool: the row starts a new group of valid rows
    group: Any  # (n,) group id of each sorted row (valid rows only are meaningful)
    count: Any  # scalar: the number of groups


def _group(rows: Any, valid: Any | None, equal_nan: bool) -> _Groups:
    """Stable sort of the (n, k) rows by (invalid, columns...) and the equal-row groups."""
    from numbax._src.numpy.reductions import cumsum

    n, k = get_aval(rows).shape
    if valid is None:
        valid = shape_ops.full((n,), True, dtypes.bool_)
    cols = [shape_ops.reshape(shape_ops.slice(rows, (0, j), (n, j + 1)), (n,))
            for j in range(k)]
    outs = _lax_sort((lax.bitwise_not(valid), *cols, _iota(n)), 0, num_keys=k + 1)
    invalid, cols, perm = outs[0], outs[1:-1], outs[-1]
    valid = lax.bitwise_not(invalid)
    if n == 0:
        empty = shape_ops.full((0,), False, dtypes.bool_)
        return _Groups(rows, perm, valid, empty, shape_ops.full((0,), 0, _INT),
                       asarray_value(np.int64(0)))
    differs = shape_ops.full((n - 1,), False, dtypes.bool_)
    for c in cols:
        hi, lo = shape_ops.slice(c, (1,), (n,)), shape_ops.slice(c, (0,), (n - 1,))
        ne = lax.ne(hi, lo)
        if equal_nan and kind_of(get_aval(c).dtype) in "fc":
            ne = lax.bitwise_and(ne, lax.bitwise_not(lax.bitwise_and(lax.ne(hi, hi),
                                                                     lax.ne(lo, lo))))
        differs = lax.bitwise_or(differs, ne)
    first = shape_ops.concatenate([shape_ops.full((1,), True, dtypes.bool_), differs], 0)
    first = lax.bitwise_and(first, valid)
    group = ufuncs.subtract(cumsum(first), 1)
    sorted_rows = shape_ops.concatenate([shape_ops.reshape(c, (n, 1)) for c in cols], 1)
    count = lax_reductions.reduce_sum(lax.convert_element_type(first, _INT), (0,))
    return _Groups(sorted_rows, perm, valid, first, group, count)


def _counts(g: _Groups, size: int) -> Any:
    ones = lax.convert_element_type(g.valid, _INT)
    target = lax.select(g.valid, g.group, shape_ops.full(get_aval(g.group).shape, size, _INT))
    return shape_ops.full((size,), 0, _INT).at[target].add(ones, mode="drop")


def _rows_of(api: str, ar: Any, axis: int | None) -> tuple[Any, tuple[int, ...], int | None]:
    """ar as (n, k) rows to deduplicate, the shape rows come from, and the canonical axis."""
    from numbax._src.numpy.shapes import moveaxis, ravel, reshape

    if axis is None:
        flat = ravel(ar)
        return reshape(flat, (get_aval(flat).size, 1)), (), None
    ax = canonicalize_axis(axis, get_aval(ar).ndim, api)
    moved = moveaxis(ar, ax, 0)
    rest = get_aval(moved).shape[1:]
    return reshape(moved, (get_aval(moved).shape[0], int(np.prod(rest, dtype=_INT)))), rest, ax


@refuses_keys("ar")
def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:  # noqa: A002
    """numpy.unique with JAX's size= and fill_value=.

    Args:
      ar: the array (flattened when axis is None; otherwise its slices along axis are the
        elements).
      return_index, return_inverse, return_counts: also return the first index of each unique
        element, the indices rebuilding `ar`, and the counts.
      equal_nan: count all NaNs as one value.
      size: static output length (needed under jit): the first `size` unique elements, padded
        with `fill_value` (by default the smallest element); indices pad with the first
        index of the smallest element and counts with 0, as in JAX.
      sorted: accepted for JAX compatibility; the result is always sorted.

    Returns:
      The unique elements, followed by the arrays asked for.

    >>> unique(asarray([3, 1, 3, 2]), return_counts=True)
    (Array([1, 2, 3], dtype=int64), Array([1, 1, 2], dtype=int64))
    """
    from numbax._src.numpy.shapes import moveaxis, reshape

    ar = _check("unique", ar)
    size = _static_size("unique", size)
    shape = get_aval(ar).shape
    rows, rest, ax = _rows_of("unique", ar, axis)
    n = get_aval(rows).shape[0]
    g = _group(rows, None, equal_nan)
    size = _resolve_size("unique", size, g.count, ar)
    if n == 0 and size > 0 and fill_value is None:
        raise NumbaxValueError("numbax.numpy.unique: ar is empty and size > 0; pass "
                               "fill_value= for the padding.")
    k = get_aval(rows).shape[1]
    row0 = shape_ops.reshape(shape_ops.slice(g.rows, (0, 0), (1, k)), (k,)) if n else None
    cols = [shape_ops.reshape(shape_ops.slice(g.rows, (0, j), (n, j + 1)), (n,))
            for j in range(k)]
    fills = [fill_value if fill_value is not None or not n else shape_ops.reshape(
        shape_ops.slice(row0, (j,), (j + 1,)), ()) for j in range(k)]
    fills = [0 if f is None else f for f in fills]
    index_fill = shape_ops.reshape(shape_ops.slice(g.perm, (0,), (1,)), ()) if n else 0
    outs = compact(g.first, size, (*fills, index_fill), *cols, g.perm)
    values = shape_ops.concatenate([shape_ops.reshape(c, (size, 1)) for c in outs[:k]], 1)
    if ax is None:
        values = shape_ops.reshape(values, (size,))
    else:
        values = moveaxis(reshape(values, (size, *rest)), 0, ax)
    result = [values]
    if return_index:
        result.append(outs[k])
    if return_inverse:
        inverse = shape_ops.full((n,), 0, _INT).at[g.perm].set(g.group) if n else \
            shape_ops.full((0,), 0, _INT)
        result.append(reshape(inverse, shape) if ax is None else inverse)
    if return_counts:
        result.append(_counts(g, size))
    return result[0] if len(result) == 1 else tuple(result)


@refuses_keys("x")
def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The array-API unique_values: the sorted distinct values (NaNs kept apart).

    Args:
      x: the array (flattened). size, fill_value: a static output length and its padding,
        as in unique (JAX's arguments, needed under jit).

    Returns:
      The values.
    """
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


@refuses_keys("x")
def unique_counts(x: Any, /, *, size: int | None = None,
                  fill_value: Any = None) -> UniqueCountsResult:
    """The array-API unique_counts: (values, counts).

    Args:
      x: the array (flattened). size, fill_value: a static output length and its padding,
        as in unique (JAX's arguments, needed under jit).

    Returns:
      A UniqueCountsResult.
    """
    return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size,
                                      fill_value=fill_value))


@refuses_keys("x")
def unique_inverse(x: Any, /, *, size: int | None = None,
                   fill_value: Any = None) -> UniqueInverseResult:
    """The array-API unique_inverse: (values, inverse_indices of x's shape).

    Args:
      x: the array (flattened). size, fill_value: a static output length and its padding,
        as in unique (JAX's arguments, needed under jit).

    Returns:
      A UniqueInverseResult.
    """
    return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size,
                                       fill_value=fill_value))


@refuses_keys("x")
def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueAllResult:
    """The array-API unique_all: (values, indices, inverse_indices, counts).

    Args:
      x: the array (flattened). size, fill_value: a static output length and its padding,
        as in unique (JAX's arguments, needed under jit).

    Returns:
      A UniqueAllResult.
    """
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True,
                                   return_counts=True, equal_nan=False, size=size,
                                   fill_value=fill_value))


# ----------------------------------------------------------------------------- membership


def _isin_sorted(x: Any, test: Any) -> Any:
    """isin by one stable sort of (value, is-element): an element is in `test` when the
    nearest test entry sorted before it has its value."""
    from numbax._src.numpy.indexing import take

    n, m = get_aval(x).shape[0], get_aval(test).shape[0]
    keys = shape_ops.concatenate([test, x], 0)
    tags = asarray_value(np.concatenate([np.zeros(m, np.int8), np.ones(n, np.int8)]))
    keys, tags, pos = _lax_sort((keys, tags, _iota(n + m)), 0, num_keys=2)
    is_test = lax.eq(tags, np.int8(0))
    last_test = lax_reductions.cummax(where(is_test, _iota(n + m), -1), axis=0)
    found = lax.bitwise_and(lax.ge(last_test, _INT(0)),
                            lax.eq(take(keys, lax.max(last_test, _INT(0))), keys))
    target = where(is_test, n, ufuncs.subtract(pos, m))
    return shape_ops.full((n,), False, dtypes.bool_).at[target].set(found, mode="drop")


def _isin_keys(element: Any, test_elements: Any, invert: bool) -> Any:
    """isin of typed key arrays, as JAX: a key is found when all its words match."""
    from numbax._src.numpy.shapes import ravel, reshape

    for arg, v in (("element", element), ("test_elements", test_elements)):
        if not isinstance(v, KeyArrayBase):
            raise NumbaxTypeError(
                f"numbax.numpy.isin: {arg} has type {type(v).__name__} while the other operand "
                "is a key array (dtype key<fry>), expected key arrays for both. Wrap raw "
                "uint32 key data with numbax.random.wrap_key_data.")
    shape = get_aval(element._word(0)).shape
    n, m = int(np.prod(shape)), int(np.prod(get_aval(test_elements._word(0)).shape))
    if n == 0 or m == 0:
        found = shape_ops.full((n,), False, dtypes.bool_)
    else:
        eq = None
        for i in range(element.num_words):
            x, t = ravel(element._word(i)), ravel(test_elements._word(i))
            same = lax.eq(shape_ops.broadcast_in_dim(x, (n, m), (0,)),
                          shape_ops.broadcast_in_dim(t, (n, m), (1,)))
            eq = same if eq is None else lax.bitwise_and(eq, same)
        found = lax_reductions.reduce_or(eq, (1,))
    if invert:
        found = lax.bitwise_not(found)
    return reshape(found, shape)


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    """numpy.isin: whether each entry of `element` occurs in `test_elements` (same shape).

    method: 'compare_all' (every pair, the default 'auto'), or 'sort' / 'binary_search'
    (one sort of both, O((n + m) log(n + m))), as in JAX. NaN is never found.

    >>> isin(asarray([1, 2, 3]), asarray([3, 1]))
    Array([ True, False,  True], dtype=bool)
    """
    from numbax._src.numpy.shapes import ravel, reshape

    if method not in ("auto", "compare_all", "sort", "binary_search"):
        raise NumbaxValueError(f"numbax.numpy.isin: method is {method!r}, expected 'auto', "
                               "'compare_all', 'sort' or 'binary_search'.")
    if isinstance(element, KeyArrayBase) or isinstance(test_elements, KeyArrayBase):
        return _isin_keys(element, test_elements, invert)
    x = _check("isin", element, "element")
    t = _check("isin", test_elements, "test_elements")
    x, t = ufuncs.promote_dtypes("isin", x, t)
    shape = get_aval(x).shape
    x, t = ravel(x), ravel(t)
    n, m = get_aval(x).shape[0], get_aval(t).shape[0]
    if n == 0 or m == 0:
        found = shape_ops.full((n,), False, dtypes.bool_)
    elif method in ("auto", "compare_all"):
        eq = lax.eq(shape_ops.broadcast_in_dim(x, (n, m), (0,)),
                    shape_ops.broadcast_in_dim(t, (n, m), (1,)))
        found = lax_reductions.reduce_or(eq, (1,))
    else:
        found = _isin_sorted(x, t)
    if invert:
        found = lax.bitwise_not(found)
    return reshape(found, shape)


# ----------------------------------------------------------------------------- set algebra


def _unique_1d(api: str, ar: Any, assume_unique: bool) -> tuple[Any, Any]:
    """(values, valid): ar flattened and deduplicated in place (duplicates marked invalid)."""
    from numbax._src.numpy.shapes import ravel

    x = ravel(_check(api, ar))
    n = get_aval(x).shape[0]
    if assume_unique or n == 0:
        return x, shape_ops.full((n,), True, dtypes.bool_)
    g = _group(shape_ops.reshape(x, (n, 1)), None, True)
    valid = shape_ops.full((n,), False, dtypes.bool_).at[g.perm].set(g.first)
    return x, valid


def _pad_min(values: Any, count: Any, size: int, fill_value: Any) -> Any:
    """Entries past `count` become fill_value (by default the smallest kept value)."""
    if fill_value is None:
        if size == 0:
            return values
        fill_value = shape_ops.reshape(shape_ops.slice(values, (0,), (1,)), ())
    fill = lax.convert_element_type(asarray(fill_value), get_aval(values).dtype)
    return where(ufuncs.less(_iota(size), count), values, fill)


def _combine(api: str, ar1: Any, ar2: Any, assume_unique: bool) -> tuple:
    """Both arrays deduplicated, promoted and concatenated, with validity and origin masks."""
    x1, v1 = _unique_1d(api, ar1, assume_unique)
    x2, v2 = _unique_1d(api, ar2, assume_unique)
    x1, x2 = ufuncs.promote_dtypes(api, x1, x2)
    n1, n2 = get_aval(x1).shape[0], get_aval(x2).shape[0]
    x = shape_ops.concatenate([x1, x2], 0)
    valid = shape_ops.concatenate([v1, v2], 0)
    # NaN never equals NaN across the arrays (numpy compares neighbours with ==): a NaN of ar1
    # and one of ar2 are two groups, so intersect1d drops them and setxor1d keeps both.
    g = _group(shape_ops.reshape(x, (n1 + n2, 1)), valid, False)
    return g, n1, n2


def _group_values(g: _Groups, keep: Any, size: int, fill_value: Any) -> tuple:
    """(values, selected rows, count): the value of each group whose `keep` (per group)
    holds, compacted to `size` and padded."""
    n = get_aval(g.first).shape[0]
    col = shape_ops.reshape(g.rows, (n,))
    if n == 0:
        fill = 0 if fill_value is None else fill_value
        empty = shape_ops.full((size,), 0, get_aval(col).dtype)
        return ufuncs.add(empty, lax.convert_element_type(asarray(fill), get_aval(col).dtype)
                          ), g.first, asarray_value(np.int64(0))
    selected = lax.bitwise_and(g.first, _keep_at(keep, g))
    (values,) = compact(selected, size, (0,), col)
    count = lax_reductions.reduce_sum(lax.convert_element_type(selected, _INT), (0,))
    return _pad_min(values, count, size, fill_value), selected, count


@refuses_keys("ar1", "ar2")
def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """numpy.union1d: the sorted distinct values of both arrays.

    Args:
      ar1, ar2: the arrays (flattened). size, fill_value: as in unique (JAX's arguments).

    Returns:
      The union.
    """
    from numbax._src.numpy.shapes import concatenate, ravel

    a1, a2 = _check("union1d", ar1, "ar1"), _check("union1d", ar2, "ar2")
    return unique(concatenate([ravel(a1), ravel(a2)]), size=size, fill_value=fill_value)


def _per_group_count(g: _Groups, n: int) -> Any:
    ones = lax.convert_element_type(g.valid, _INT)
    target = lax.select(g.valid, g.group, shape_ops.full((n,), n, _INT))
    return shape_ops.full((n,), 0, _INT).at[target].add(ones, mode="drop")


@refuses_keys("ar1", "ar2")
def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    """numpy.setxor1d: the sorted values in exactly one of the arrays.

    >>> setxor1d(asarray([1, 2, 3]), asarray([2, 5]))
    Array([1, 3, 5], dtype=int64)
    """
    size = _static_size("setxor1d", size)
    g, n1, n2 = _combine("setxor1d", ar1, ar2, assume_unique)
    keep = lax.eq(_per_group_count(g, n1 + n2), _INT(1))
    _, _, count = _group_values(g, keep, 0, fill_value)
    size = _resolve_size("setxor1d", size, count, ar1, ar2)
    return _group_values(g, keep, size, fill_value)[0]


def _keep_at(keep: Any, g: _Groups) -> Any:
    """`keep` (one entry per group) looked up for each sorted row."""
    from numbax._src.numpy.indexing import take

    return take(keep, g.group, mode="clip")


@refuses_keys("ar1", "ar2")
def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
    """numpy.intersect1d: the sorted values in both arrays; with return_indices, also the
    first index of each in the flattened ar1 and ar2 (padding: the arrays' sizes, as JAX).

    >>> intersect1d(asarray([1, 2, 3, 2]), asarray([5, 3, 2]), return_indices=True)
    (Array([2, 3], dtype=int64), Array([1, 2], dtype=int64), Array([2, 1], dtype=int64))
    """
    size = _static_size("intersect1d", size)
    g, n1, n2 = _combine("intersect1d", ar1, ar2, assume_unique)
    n = n1 + n2
    keep = lax.eq(_per_group_count(g, n), _INT(2))
    _, _, count = _group_values(g, keep, 0, fill_value)
    size = _resolve_size("intersect1d", size, count, ar1, ar2)
    values, selected, count = _group_values(g, keep, size, fill_value)
    if not return_indices:
        return values
    if n == 0:
        return values, shape_ops.full((size,), n1, _INT), shape_ops.full((size,), n2, _INT)
    big = _INT(n + 1)
    from1 = lax.lt(g.perm, _INT(n1))
    first1 = shape_ops.full((n,), big, _INT).at[g.group].min(
        where(lax.bitwise_and(from1, g.valid), g.perm, big))
    first2 = shape_ops.full((n,), big, _INT).at[g.group].min(
        where(lax.bitwise_and(lax.bitwise_not(from1), g.valid), ufuncs.subtract(g.perm, n1),
              big))
    (i1, i2) = compact(selected, size, (n1, n2), _keep_at(first1, g), _keep_at(first2, g))
    inside = ufuncs.less(_iota(size), count)
    return values, where(inside, i1, n1), where(inside, i2, n2)


@refuses_keys("ar1", "ar2")
def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    """numpy.setdiff1d: the sorted distinct values of ar1 not in ar2 (with assume_unique, the
    values of ar1 in their order, as numpy); padding fill_value defaults to 0, as in JAX.

    >>> setdiff1d(asarray([4, 1, 2, 1]), asarray([2]))
    Array([1, 4], dtype=int64)
    """
    from numbax._src.numpy.shapes import ravel

    size = _static_size("setdiff1d", size)
    x1, v1 = _unique_1d("setdiff1d", ar1, assume_unique)
    t = ravel(_check("setdiff1d", ar2, "ar2"))
    n = get_aval(x1).shape[0]
    fill = 0 if fill_value is None else fill_value
    keep = lax.bitwise_and(v1, isin(x1, t, invert=True, method="sort"))
    if not assume_unique and n:
        g = _group(shape_ops.reshape(x1, (n, 1)), keep, True)
        x1 = shape_ops.reshape(g.rows, (n,))
        keep = g.first
    count = lax_reductions.reduce_sum(lax.convert_element_type(keep, _INT), (0,))
    size = _resolve_size("setdiff1d", size, count, ar1, ar2)
    (values,) = compact(keep, size, (fill,), x1)
    return values
