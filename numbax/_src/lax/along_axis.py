"""Gathers along one axis and the associative scans built on them: the pieces that give sort,
cumprod, cummax/cummin and reduce_prod exact derivatives (with zeros and ties) at any order.

`take_along_axis` and `scatter_add_along_axis` are numbax-only primitives (JAX expresses both
with `gather`/`scatter-add`); each is the other's transpose.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, trace_target
from numbax._src import tree_util as tu
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops


def _check_indices(name: str, x_shape: tuple, idx: ShapedArray, axis: int) -> None:
    if kind_of(idx.dtype) not in "iu":
        raise NumbaxTypeError(
            f"{name}: indices have dtype {idx.dtype}, expected an integer dtype."
        )
    if len(x_shape) != idx.ndim or not 0 <= axis < idx.ndim:
        raise NumbaxValueError(
            f"{name}: indices have shape {idx.shape} and the operand has shape {x_shape}, "
            f"expected equal ranks and 0 <= axis < rank (axis is {axis})."
        )
    for d, (s, i) in enumerate(zip(x_shape, idx.shape, strict=True)):
        if d != axis and i not in (1, s):
            raise NumbaxValueError(
                f"{name}: indices have shape {idx.shape} and the operand has shape {x_shape}; "
                f"dimension {d} must match (or be 1 in the indices)."
            )


def _index_grid(idx: np.ndarray, axis: int, shape: tuple) -> tuple:
    """Full numpy index tuple (broadcast) that reads element idx[...] along `axis`."""
    out_shape = tuple(idx.shape[d] if d == axis else shape[d] for d in range(len(shape)))
    grid = list(np.indices(out_shape, sparse=True))
    grid[axis] = np.broadcast_to(idx, out_shape)
    return tuple(grid)


# ----------------------------------------------------------------------------- take_along_axis

take_along_axis_p = Primitive("take_along_axis")  # numbax-only


def _take_along_axis_abstract_eval(x: ShapedArray, idx: ShapedArray, *, axis) -> list:
    _check_indices("take_along_axis", x.shape, idx, axis)
    shape = tuple(idx.shape[d] if d == axis else x.shape[d] for d in range(x.ndim))
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _take_along_axis_impl(x, idx, *, axis):
    return [x[_index_grid(idx, axis, x.shape)]]


def _take_along_axis_transpose(cts, x, idx, *, axis):
    (ct,) = cts
    assert ad.is_undefined_primal(x) and not ad.is_undefined_primal(idx)
    return [scatter_add_along_axis(ct, idx, axis, x.aval.shape[axis]), None]


def _batch_pair(axis_size, vals, dims):
    """Moves the batch axis of (operand, indices) to the front; unbatched indices get a
    broadcastable leading 1."""
    (x, idx), (xd, idd) = vals, dims
    x = batching.bdim_at_front(x, xd, axis_size)
    if idd is None:
        idx = shape_ops.reshape(idx, (1, *get_aval(idx).shape))
    else:
        idx = batching.moveaxis(idx, idd, 0)
    return x, idx


def _take_along_axis_batch(axis_size, vals, dims, *, axis):
    x, idx = _batch_pair(axis_size, vals, dims)
    return [take_along_axis_p.bind(x, idx, axis=axis + 1)], [0]


core.abstract_eval_rules[take_along_axis_p] = _take_along_axis_abstract_eval
core.impl_rules[take_along_axis_p] = _take_along_axis_impl
ad.jvp_rules[take_along_axis_p] = lambda primals, tangents, *, axis: (
    [take_along_axis_p.bind(*primals, axis=axis)],
    [ad.Zero(ad.tangent_aval(_take_along_axis_abstract_eval(
        get_aval(primals[0]), get_aval(primals[1]), axis=axis)[0]))
     if type(tangents[0]) is ad.Zero else take_along_axis_p.bind(tangents[0], primals[1],
                                                                  axis=axis)],
)
ad.transpose_rules[take_along_axis_p] = _take_along_axis_transpose
batching.batch_rules[take_along_axis_p] = _take_along_axis_batch


def take_along_axis(x: Any, idx: Any, axis: int) -> Any:
    """x[..., idx, ...] along `axis`; idx has x's rank, its other dimensions equal or 1."""
    return take_along_axis_p.bind(x, idx, axis=int(axis))


# ----------------------------------------------------------------------------- scatter_add

scatter_add_along_axis_p = Primitive("scatter_add_along_axis")  # numbax-only


def _scatter_add_abstract_eval(u: ShapedArray, idx: ShapedArray, *, axis, size) -> list:
    _check_indices("scatter_add_along_axis", u.shape, idx, axis)
    if idx.shape[axis] != u.shape[axis]:
        raise NumbaxValueError(
            f"scatter_add_along_axis: indices have shape {idx.shape} and the updates have "
            f"shape {u.shape}; they must agree along axis {axis}."
        )
    shape = tuple(size if d == axis else u.shape[d] for d in range(u.ndim))
    return [ShapedArray(shape, u.dtype, u.weak_type)]


def _scatter_add_impl(u, idx, *, axis, size):
    shape = tuple(size if d == axis else u.shape[d] for d in range(u.ndim))
    out = np.zeros(shape, u.dtype)
    np.add.at(out, _index_grid(idx, axis, shape), u)
    return [out]


def _scatter_add_transpose(cts, u, idx, *, axis, size):
    (ct,) = cts
    assert ad.is_undefined_primal(u) and not ad.is_undefined_primal(idx)
    return [take_along_axis_p.bind(ct, idx, axis=axis), None]


def _scatter_add_batch(axis_size, vals, dims, *, axis, size):
    u, idx = _batch_pair(axis_size, vals, dims)
    return [scatter_add_along_axis_p.bind(u, idx, axis=axis + 1, size=size)], [0]


core.abstract_eval_rules[scatter_add_along_axis_p] = _scatter_add_abstract_eval
core.impl_rules[scatter_add_along_axis_p] = _scatter_add_impl
ad.deflinear(scatter_add_along_axis_p, _scatter_add_transpose)
batching.batch_rules[scatter_add_along_axis_p] = _scatter_add_batch


def _scatter_add_linear_jvp(primals, tangents, *, axis, size):
    (u, idx), (t, _) = primals, tangents
    ans = scatter_add_along_axis_p.bind(u, idx, axis=axis, size=size)
    if type(t) is ad.Zero:
        return [ans], [ad.Zero(ad.tangent_aval(get_aval(ans)))]
    return [ans], [scatter_add_along_axis_p.bind(t, idx, axis=axis, size=size)]


ad.jvp_rules[scatter_add_along_axis_p] = _scatter_add_linear_jvp


def scatter_add_along_axis(u: Any, idx: Any, axis: int, size: int) -> Any:
    """Zeros with `size` entries along `axis`, plus u added at positions idx."""
    return scatter_add_along_axis_p.bind(u, idx, axis=int(axis), size=int(size))


# ----------------------------------------------------------------------------- scans


def iota_along(shape: tuple[int, ...], axis: int, dtype: Any = np.int64) -> np.ndarray:
    """0, 1, ... along `axis`, shaped to broadcast against `shape` (1 elsewhere)."""
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.arange(shape[axis], dtype=dtype).reshape(view)


def shift(x: Any, offset: int, axis: int, fill: Any, reverse: bool = False) -> Any:
    """y[i] = x[i - offset] along `axis` (x[i + offset] if reverse), `fill` off the end: one
    pad that adds `offset` fills on one side and crops as many elements off the other, as
    XLA writes a shift (its transpose is the opposite pad; a gather by constant positions
    was a library call per shift, in both directions)."""
    aval = get_aval(x)
    n = aval.shape[axis]
    if offset >= n:
        return shape_ops.full(aval.shape, fill, aval.dtype)
    config = [(0, 0, 0)] * aval.ndim
    config[axis] = (-offset, offset, 0) if reverse else (offset, -offset, 0)
    return shape_ops.pad(x, np.asarray(fill, aval.dtype), config)


def associative_scan(combine: Callable, elems: list, axis: int, reverse: bool,
                     identities: list) -> list:
    """Inclusive Hillis-Steele scan of tuples of arrays with an associative `combine`
    (earlier, later) -> combined; log2(n) rounds of shifts, each a differentiable lax op."""
    n = get_aval(elems[0]).shape[axis]
    offset = 1
    while offset < n:
        earlier = [shift(e, offset, axis, ident, reverse)
                   for e, ident in zip(elems, identities, strict=True)]
        elems = combine(earlier, elems)
        offset *= 2
    return elems


def _interleave(a: Any, b: Any, axis: int) -> Any:
    """a[0], b[0], a[1], b[1], ... along axis (a is as long as b or one longer): the pairs
    picked from the two operands broadcast along a new axis of size 2 after `axis`, then
    reshaped, which compiles to one fused loop (index maps) where a concatenation along the
    new axis was a copy of its own."""
    na, nb = get_aval(a).shape[axis], get_aval(b).shape[axis]
    shape = list(get_aval(b).shape)
    pairs = (*shape[:axis + 1], 2, *shape[axis + 1:])
    dims = tuple(d for d in range(len(pairs)) if d != axis + 1)
    which = shape_ops.broadcast_in_dim(np.array([False, True]), pairs, (axis + 1,))
    merged = ew.select_n(which, shape_ops.broadcast_in_dim(
        shape_ops.slice_in_dim(a, 0, nb, axis=axis), pairs, dims),
        shape_ops.broadcast_in_dim(b, pairs, dims))
    merged = shape_ops.reshape(merged, (*shape[:axis], 2 * nb, *shape[axis + 1:]))
    if na == nb:
        return merged
    return shape_ops.concatenate([merged, shape_ops.slice_in_dim(a, nb, na, axis=axis)], axis)


def public_associative_scan(fn: Callable, elems: Any, reverse: bool = False,
                            axis: int = 0) -> Any:
    """Inclusive scan of elems (a pytree of arrays) along `axis` with the associative
    function fn (on pytrees of arrays of one shape, elementwise): out[i] is
    fn(... fn(elems[0], elems[1]) ..., elems[i]), from the end when reverse.

    It recurses on pairs (fn of each even element with the odd one after it), O(log n)
    rounds of fn over whole arrays, as JAX's lax.associative_scan does.

    >>> public_associative_scan(lambda a, b: a + b, np.arange(5.0))
    Array([ 0.,  1.,  3.,  6., 10.], dtype=float64)
    """
    flat, tree = tu.tree_flatten(elems)
    if not flat:
        raise NumbaxValueError("lax.associative_scan: elems is empty, expected arrays.")
    ndim = get_aval(flat[0]).ndim
    axis = shape_ops._canonical_axis("lax.associative_scan", axis, ndim)
    lengths = [get_aval(e).shape[axis] if get_aval(e).ndim > axis else None for e in flat]
    if any(n != lengths[0] for n in lengths):
        raise NumbaxValueError(
            "Array inputs to associative_scan must have the same first dimension. "
            f"(saw: {[get_aval(e).shape for e in flat]})")

    def combine(a: list, b: list) -> list:
        out, out_tree = tu.tree_flatten(fn(tu.tree_unflatten(tree, a),
                                           tu.tree_unflatten(tree, b)))
        if out_tree != tree:
            raise NumbaxTypeError(
                f"lax.associative_scan: fn returned the structure {out_tree}, expected that "
                f"of elems, {tree}.")
        return out

    if trace_target.current() == "cpu" and lengths[0] > 1 and _keeps_rows(combine, flat, axis):
        return tu.tree_unflatten(tree, _sequential_scan(combine, flat, axis, reverse))
    if reverse:
        flat = [shape_ops.rev(e, (axis,)) for e in flat]

    def scan(xs: list) -> list:
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        pairs = combine([shape_ops.slice_in_dim(x, 0, n - 1, 2, axis) for x in xs],
                        [shape_ops.slice_in_dim(x, 1, None, 2, axis) for x in xs])
        odd = scan(pairs)
        later = [shape_ops.slice_in_dim(x, 2, None, 2, axis) for x in xs]
        if n % 2 == 0:
            even = combine([shape_ops.slice_in_dim(o, 0, -1, axis=axis) for o in odd], later)
        else:
            even = combine(odd, later)
        even = [shape_ops.concatenate([shape_ops.slice_in_dim(x, 0, 1, axis=axis), e], axis)
                for x, e in zip(xs, even, strict=True)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd, strict=True)]

    out = scan(flat)
    if reverse:
        out = [shape_ops.rev(e, (axis,)) for e in out]
    return tu.tree_unflatten(tree, out)


def _row_avals(xs: list, axis: int) -> list[ShapedArray]:
    """Each array's aval with `axis` of length 1: what fn is given one row at a time."""
    return [ShapedArray((*a.shape[:axis], 1, *a.shape[axis + 1:]), a.dtype)
            for a in map(get_aval, xs)]


def _keeps_rows(combine: Callable, xs: list, axis: int) -> bool:
    """Whether combine of two rows (`_row_avals`) gives rows of the same shapes and dtypes,
    as a sequential loop's carry must (an fn that changes them gets JAX's tree, and its
    errors)."""
    from numbax._src.interpreters import partial_eval as pe

    rows = _row_avals(xs, axis)
    k = len(rows)
    jaxpr, _ = pe.trace_to_jaxpr_dynamic(lambda *r: combine(list(r[:k]), list(r[k:])),
                                         rows + rows)
    return [(v.aval.shape, v.aval.dtype) for v in jaxpr.outvars] == \
        [(r.shape, r.dtype) for r in rows]


def _sequential_scan(combine: Callable, xs: list, axis: int, reverse: bool) -> list:
    """The inclusive scan as one loop (lax.scan) over `axis`: carry = combine(carry, row) for
    each row after the first (from the last one when reverse), every row of length 1 along
    `axis`, the shape a vectorised fn meets in JAX's tree. A jit trace for the CPU takes this
    form (trace_target): one compiled loop of n - 1 combines, where the tree's ~2 log2(n)
    rounds of slices, combines and interleaves compiled a Numba kernel each (a linear
    recurrence over 301 steps: 7.8 s to compile against 1.2 on the VM; docs/performance.md)."""
    from numbax._src.lax.control_flow import loops

    n = get_aval(xs[0]).shape[axis]
    rows = []
    for x in xs:  # (n, *shape with axis of length 1): the loop runs over the leading axis
        shape = get_aval(x).shape
        moved = x if axis == 0 else shape_ops.transpose(
            x, (axis, *(d for d in range(len(shape)) if d != axis)))
        rows.append(shape_ops.reshape(moved, (n, *shape[:axis], 1, *shape[axis + 1:])))
    first = n - 1 if reverse else 0
    # the carry without the row's axis of 1, reshaped around each combine: a carry of one
    # element is then a scalar the compiled loop keeps in a register; as an array of one its
    # every step went through memory twice (a linear recurrence: 6.8 against 1.6 ms a million)
    row_shapes = [get_aval(r).shape[1:] for r in rows]
    kept = tuple(d for d in range(len(row_shapes[0])) if d != axis)  # the carry's axes in a row
    init = [shape_ops.reshape(shape_ops.slice_in_dim(r, first, first + 1, axis=0),
                              _without(shape, axis))
            for r, shape in zip(rows, row_shapes, strict=True)]
    rest = [shape_ops.slice_in_dim(r, 0, n - 1, axis=0) if reverse
            else shape_ops.slice_in_dim(r, 1, n, axis=0) for r in rows]

    def step(carry: list, row: list) -> tuple[list, list]:
        whole = [shape_ops.broadcast_in_dim(c, shape, kept)  # (a read where the loop fuses)
                 for c, shape in zip(carry, row_shapes, strict=True)]
        out = combine(whole, list(row))
        out = [shape_ops.reshape(o, _without(shape, axis)) for o, shape in zip(
            out, row_shapes, strict=True)]
        return out, out

    _, scanned = loops.scan(step, init, rest, reverse=reverse)
    outs = []
    for x, start, later in zip(xs, init, scanned, strict=True):
        shape = get_aval(x).shape
        start = shape_ops.expand_dims(start, (0,))
        whole = shape_ops.concatenate([later, start] if reverse else [start, later], 0)
        whole = shape_ops.reshape(whole, (n, *shape[:axis], *shape[axis + 1:]))
        outs.append(whole if axis == 0 else shape_ops.transpose(
            whole, (*range(1, axis + 1), 0, *range(axis + 1, len(shape)))))
    return outs


def _without(shape: tuple, axis: int) -> tuple:
    return (*shape[:axis], *shape[axis + 1:])
