"""ragged_dot and ragged_dot_general: matrix products whose lhs has one ragged dimension cut
into consecutive groups (group_sizes), each group meeting its own slice of rhs. Composed as
JAX's reference does: the ragged operand is expanded into one masked copy per group, then one
dot_general contracts (or sums) over the groups."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import dot, reductions, shape_ops
from numbax._src.lax import elementwise as ew
from numbax._src.lax.params import RaggedDotDimensionNumbers

_BASIC = RaggedDotDimensionNumbers(dot_dimension_numbers=(((1,), (1,)), ((), ())),
                                   lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))


def _free(rank: int, *taken: Sequence[int]) -> list[int]:
    used = {d for dims in taken for d in dims}
    return [d for d in range(rank) if d not in used]


def _expand(x: Any, dim: int, group_sizes: Any, prefix: Sequence[int]) -> Any:
    """(g, *x.shape): copy gi of x keeps the entries whose index along `dim` lies in group gi
    (group_sizes has shape [x.shape[p] for p in prefix] + [g]), zeros elsewhere."""
    shape = get_aval(x).shape
    g = get_aval(group_sizes).shape[-1]
    full = (g, *shape)
    ends = reductions.cumsum(group_sizes, axis=get_aval(group_sizes).ndim - 1)
    starts = ew.sub(ends, group_sizes)
    target = [*[1 + p for p in prefix], 0]  # where each axis of group_sizes goes
    order = tuple(sorted(range(len(target)), key=target.__getitem__))
    dims = tuple(sorted(target))
    ends = shape_ops.broadcast_in_dim(shape_ops.transpose(ends, order), full, dims)
    starts = shape_ops.broadcast_in_dim(shape_ops.transpose(starts, order), full, dims)
    iota = shape_ops.broadcasted_iota(get_aval(group_sizes).dtype, full, dim + 1)
    inside = ew.bitwise_and(ew.le(starts, iota), ew.lt(iota, ends))
    copies = shape_ops.broadcast_in_dim(x, full, tuple(range(1, len(full))))
    return ew.select(inside, copies, shape_ops.full(full, 0, get_aval(x).dtype))


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any,
                       ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None,
                       group_offset: Any = None, out_sharding: Any = None) -> Any:
    """Ragged matrix product with dot_general's dimension numbers, in JAX's three modes by
    the kind of lhs's ragged dimension:

    1. non-contracting (m): [b.., m.., k..] x [g, b.., k.., n..] -> [b.., m.., n..], each
       row group meeting rhs's slice along its group dimension;
    2. contracting (k): [b.., m.., k..] x [b.., k.., n..] -> [g, b.., m.., n..], one product
       per group of the contracted dimension;
    3. batch (b): the plain dot_general.

    group_sizes has shape [g] or [outer dims..., g] (the batch and lhs dims outer to the
    ragged one); rows past the last group give zeros. group_offset is not supported (as in
    JAX).

    >>> lhs, rhs = np.ones((4, 2)), np.stack([np.eye(2), 2 * np.eye(2)])
    >>> ragged_dot(lhs, rhs, np.array([1, 3]))
    Array([[1., 1.],
           [2., 2.],
           [2., 2.],
           [2., 2.]], dtype=float64)
    """
    api = "lax.ragged_dot_general"
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    dn = ragged_dot_dimension_numbers
    if not isinstance(dn, RaggedDotDimensionNumbers):
        raise NumbaxTypeError(
            f"{api}: ragged_dot_dimension_numbers has {type(dn).__name__}, expected a "
            "lax.RaggedDotDimensionNumbers.")
    if kind_of(get_aval(group_sizes).dtype) not in "iu":
        raise NumbaxTypeError(
            f"{api}: group_sizes has dtype {get_aval(group_sizes).dtype}, expected an integer "
            "dtype.")
    if len(dn.lhs_ragged_dimensions) != 1:
        raise NumbaxValueError(
            f"{api}: lhs_ragged_dimensions has {dn.lhs_ragged_dimensions}, expected one "
            "dimension.")
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    lc, rc, lb, rb = map(list, (lc, rc, lb, rb))
    lrank = get_aval(lhs).ndim
    ragged = dn.lhs_ragged_dimensions[0]
    l_free = _free(lrank, lc, lb)
    if ragged in l_free:
        prefix = lb + l_free[:l_free.index(ragged)]
    elif ragged in lc:
        prefix = lb + lc[:lc.index(ragged)]
    elif ragged in lb:
        return dot.dot_general(lhs, rhs, ((lc, rc), (lb, rb)), precision,
                               preferred_element_type)
    else:
        raise NumbaxTypeError(
            f"lhs_ragged_dim {ragged} not found in lhs_noncontracting {l_free}, "
            f"lhs_contracting {lc}, or lhs_batch {lb}.")
    lhs_shape = get_aval(lhs).shape
    if get_aval(group_sizes).ndim == 1:
        group_sizes = shape_ops.broadcast(group_sizes, [lhs_shape[p] for p in prefix])
    expected = (*[lhs_shape[p] for p in prefix], get_aval(group_sizes).shape[-1])
    if get_aval(group_sizes).shape != expected:
        raise NumbaxValueError(
            f"{api}: group_sizes has shape {get_aval(group_sizes).shape}, expected {expected} "
            "(or just its last dimension): the dims outer to the ragged one, then the groups.")
    incr = lambda dims: [d + 1 for d in dims]  # noqa: E731
    dense_lhs = _expand(lhs, ragged, group_sizes, prefix)
    if ragged in l_free:
        if len(dn.rhs_group_dimensions) != 1:
            raise NumbaxValueError(
                f"{api}: a ragged non-contracting dimension needs one rhs group dimension, "
                f"got {dn.rhs_group_dimensions}.")
        group_dim = dn.rhs_group_dimensions[0]
        if get_aval(rhs).shape[group_dim] != expected[-1]:
            raise NumbaxValueError(
                f"{api}: rhs has {get_aval(rhs).shape[group_dim]} groups along dimension "
                f"{group_dim}, group_sizes {expected[-1]}.")
        return dot.dot_general(dense_lhs, rhs, ((incr(lc) + [0], rc + [group_dim]),
                                                (incr(lb), rb)),
                               precision, preferred_element_type)
    if dn.rhs_group_dimensions:
        raise NumbaxValueError(
            f"{api}: a ragged contracting dimension takes no rhs group dimension, got "
            f"{dn.rhs_group_dimensions}.")
    r_ragged = rc[lc.index(ragged)]
    r_prefix = rb + rc[:rc.index(r_ragged)]
    dense_rhs = _expand(rhs, r_ragged, group_sizes, r_prefix)
    return dot.dot_general(dense_lhs, dense_rhs, ((incr(lc), incr(rc)),
                                                  ([0] + incr(lb), [0] + incr(rb))),
                           precision, preferred_element_type)


def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None,
               preferred_element_type: Any = None, group_offset: Any = None,
               out_sharding: Any = None) -> Any:
    """(m, k) x (g, k, n) -> (m, n): row i of lhs, in group j (consecutive groups of
    group_sizes rows), is multiplied by rhs[j]; rows past the groups give zeros."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision,
                              preferred_element_type, group_offset)

