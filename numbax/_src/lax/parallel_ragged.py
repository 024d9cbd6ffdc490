"""ragged_all_to_all: all_to_all of ragged data (slices of the leading axis given by offsets
and sizes). Its rules: the exchange under the vmap that names its axis (a body run in the
caller), the batching rule of another vmap, and its jvp and transpose (it is linear in
operand and output). The SPMD workers' exchange is parallel/collectives_p2p.py's."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import along_axis, parallel, parallel_redistribute, reductions, shape_ops
from numbax._src.lax import elementwise as ew

ragged_all_to_all_p = Primitive("ragged_all_to_all")

_OFFSET_ARGS = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")


def _ragged_abstract_eval(operand, output, *offsets: ShapedArray, axis_name,
                          axis_index_groups) -> list:
    """JAX's checks (ValueError, in its words), then the output's type."""
    for name, aval in zip(_OFFSET_ARGS, offsets, strict=True):
        if kind_of(aval.dtype) not in "iu":
            raise NumbaxValueError(f"ragged_all_to_all {name} must be integer type.")
        if aval.ndim != 1 or aval.shape[0] < 1:
            raise NumbaxValueError(
                f"ragged_all_to_all {name} must be rank 1 with positive dimension size, but "
                f"got shape {aval.shape}")
    if operand.dtype != output.dtype or operand.shape[1:] != output.shape[1:] or \
            operand.ndim < 1:
        raise NumbaxTypeError(
            f"ragged_all_to_all: operand has type {operand.str_short()} and output "
            f"{output.str_short()}, expected one dtype and equal shapes after the leading "
            "axis. Make output like the operand, with the rows to receive.")
    return [ShapedArray(output.shape, output.dtype)]


def _ragged_impl(*args, axis_name, **params):
    raise NameError(f"lax.ragged_all_to_all: unbound axis name {axis_name!r}")


def _column(meta: Any, sender: int, t: int, n: int, spd: int) -> Any:
    """meta[sender, r * spd + t] for every receiver r (meta: (n, n * spd))."""
    row = shape_ops.reshape(shape_ops.slice_in_dim(meta, sender, sender + 1, axis=0), (n, spd))
    return shape_ops.reshape(shape_ops.slice_in_dim(row, t, t + 1, axis=1), (n,))


def _ragged_collective(axis_data, vals, dims, *, axis_name, axis_index_groups):
    """The exchange over the vmapped axis: receiver r's output rows [o, o + size) take
    sender s's operand rows [i, i + size), for every slice of s destined to r, in the order
    of JAX's pseudocode (sender, then slice)."""
    if len(axis_name) != 1:
        raise NotImplementedError(
            "lax.ragged_all_to_all: over several axis names only inside a shard_map or pmap "
            "on the SPMD workers; here give one axis name.")
    n = axis_data.size
    operand, output, in_off, send, out_off, _ = [
        batching.bdim_at_front(v, d, n) for v, d in zip(vals, dims, strict=True)]
    big, m = core.get_aval(operand).shape[1], core.get_aval(output).shape[1]
    rest = core.get_aval(output).shape[2:]
    spd = core.get_aval(in_off).shape[1] // n
    dtype = core.get_aval(in_off).dtype
    rows = shape_ops.broadcast_in_dim(np.arange(m, dtype=dtype), (n, m), (1,))
    result = output
    for s in range(n):
        sent = shape_ops.broadcast_in_dim(
            shape_ops.reshape(shape_ops.slice_in_dim(operand, s, s + 1, axis=0),
                              (big, *rest)), (n, big, *rest), tuple(range(1, 2 + len(rest))))
        for t in range(spd):
            start = shape_ops.broadcast_in_dim(_column(out_off, s, t, n, spd), (n, m), (0,))
            size = shape_ops.broadcast_in_dim(_column(send, s, t, n, spd), (n, m), (0,))
            first = shape_ops.broadcast_in_dim(_column(in_off, s, t, n, spd), (n, m), (0,))
            hit = ew.bitwise_and(ew.ge(rows, start), ew.lt(rows, ew.add(start, size)))
            src = ew.add(first, ew.sub(rows, start))
            src = ew.max(ew.min(src, shape_ops.full((n, m), max(big - 1, 0), dtype)),
                         shape_ops.full((n, m), 0, dtype))
            idx = shape_ops.broadcast_in_dim(src, (n, m, *rest), (0, 1))
            got = along_axis.take_along_axis(sent, idx, 1)
            result = ew.select(shape_ops.broadcast_in_dim(hit, (n, m, *rest), (0, 1)), got,
                               result)
    return [result], [0]


def _ragged_batch(axis_size, vals, dims, *, axis_name, axis_index_groups):
    """Another vmap's axis: the examples' ragged arrays laid end to end (offsets moved by
    each example's start), one exchange, split again (JAX's rule)."""
    b = axis_size
    operand, output = [batching.bdim_at_front(v, d, b) for v, d in zip(vals[:2], dims[:2])]
    metas = [batching.moveaxis(batching.bdim_at_front(v, d, b), 0, 1)
             for v, d in zip(vals[2:], dims[2:])]  # (K, b)
    shape_op, shape_out = core.get_aval(operand).shape, core.get_aval(output).shape
    k, dtype = core.get_aval(metas[0]).shape[0], core.get_aval(metas[0]).dtype
    step = lambda size: shape_ops.broadcast_in_dim(  # noqa: E731
        np.arange(b, dtype=dtype) * size, (k, b), (1,))
    metas[0] = ew.add(metas[0], step(shape_op[1]))
    metas[2] = ew.add(metas[2], step(shape_out[1]))
    merged = [shape_ops.reshape(operand, (b * shape_op[1], *shape_op[2:])),
              shape_ops.reshape(output, (b * shape_out[1], *shape_out[2:])),
              *(shape_ops.reshape(x, (k * b,)) for x in metas)]
    # slice i of each example goes to the same member: the K slices interleave the examples
    out = ragged_all_to_all_p.bind(*merged, axis_name=axis_name,
                                   axis_index_groups=axis_index_groups)
    return [shape_ops.reshape(out, shape_out)], [0]


def _ragged_jvp(primals, tangents, **params):
    out = ragged_all_to_all_p.bind(*primals, **params)
    if type(tangents[0]) is ad.Zero and type(tangents[1]) is ad.Zero:
        return [out], [ad.Zero.from_primal_value(out)]
    dots = [ad.instantiate_zeros(t) for t in tangents[:2]]
    return [out], [ragged_all_to_all_p.bind(*dots, *primals[2:], **params)]


def _ragged_transpose(cts, operand, output, input_offsets, send_sizes, output_offsets,
                      recv_sizes, *, axis_name, axis_index_groups):
    """The exchange backwards (each member sends back the rows it received, JAX's rule);
    the output's cotangent is ct with the received rows zeroed."""
    (ct,) = cts
    name = axis_name[0] if len(axis_name) == 1 else axis_name
    here = parallel_redistribute.all_to_all(output_offsets, name, 0, 0, tiled=True)
    there = parallel_redistribute.all_to_all(input_offsets, name, 0, 0, tiled=True)
    ct_operand = ct_output = None
    if ad.is_undefined_primal(operand):
        zero = ad.zeros_like_aval(operand.aval)
        ct_operand = ragged_all_to_all_p.bind(
            parallel._lift_to_axes(ct, axis_name), zero, here, recv_sizes, there, send_sizes,
            axis_name=axis_name, axis_index_groups=axis_index_groups)
    if ad.is_undefined_primal(output):
        shape = core.get_aval(ct).shape
        k = core.get_aval(here).shape[0]
        rows = shape_ops.broadcast_in_dim(np.arange(shape[0], dtype=core.get_aval(here).dtype),
                                          (k, shape[0]), (1,))
        start = shape_ops.broadcast_in_dim(here, (k, shape[0]), (0,))
        stop = shape_ops.broadcast_in_dim(ew.add(here, recv_sizes), (k, shape[0]), (0,))
        got = reductions.reduce_or(ew.bitwise_and(ew.ge(rows, start), ew.lt(rows, stop)), (0,))
        mask = shape_ops.broadcast_in_dim(got, shape, (0,))
        ct_output = ew.select(mask, shape_ops.full(shape, 0, core.get_aval(ct).dtype), ct)
    return [ct_operand, ct_output, None, None, None, None]


core.abstract_eval_rules[ragged_all_to_all_p] = _ragged_abstract_eval
core.impl_rules[ragged_all_to_all_p] = _ragged_impl
ad.jvp_rules[ragged_all_to_all_p] = _ragged_jvp
ad.transpose_rules[ragged_all_to_all_p] = _ragged_transpose
batching.def_collective(ragged_all_to_all_p, _ragged_collective)
batching.batch_rules[ragged_all_to_all_p] = _ragged_batch


def ragged_all_to_all(operand: Any, output: Any, input_offsets: Any, send_sizes: Any,
                      output_offsets: Any, recv_sizes: Any, *, axis_name: Any,
                      axis_index_groups: Any = None) -> Any:
    """all_to_all of ragged data: slice i of the caller's operand (rows input_offsets[i] to
    input_offsets[i] + send_sizes[i]) goes to member i // (K / axis size), where it is
    written at rows output_offsets[i] of that member's copy of `output`; recv_sizes[i] is
    the size of slice i the caller receives (K: the offsets' common length, a multiple of the
    axis size).

    Args:
      operand: (N, ...) rows to send.
      output: (M, ...) the array the received rows are written into.
      input_offsets, send_sizes, output_offsets, recv_sizes: 1-D integer arrays of length K.
      axis_name: the named axis (or a tuple of them, members numbered row-major).
      axis_index_groups: only None (all members) is supported.

    Returns:
      output with the received rows written.

    Unlike JAX: axis_index_groups must be None; under vmap (and a shard_map body run in the
    caller) only one axis name is supported.
    """
    api = "lax.ragged_all_to_all"
    parallel_redistribute._no_groups(api, axis_index_groups)
    names = parallel_redistribute._names(api, axis_name)
    parallel._check_bound("ragged_all_to_all", names)
    size = parallel.axis_size(names)
    args = (operand, output, input_offsets, send_sizes, output_offsets, recv_sizes)
    _ragged_abstract_eval(*(core.get_aval(x) for x in args), axis_name=names,
                          axis_index_groups=None)  # checked here too: vmap's rule skips it
    k = core.get_aval(input_offsets).shape
    if k[0] % size:
        raise NumbaxValueError(
            f"{api}: input_offsets has length {k[0]}, expected a multiple of the size of axis "
            f"{axis_name!r} ({size}). Give each member the same number of slices.")
    args = [parallel._lift_to_axes(x, names) for x in args]
    return ragged_all_to_all_p.bind(*args, axis_name=names, axis_index_groups=None)
