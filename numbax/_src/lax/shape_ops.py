"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, and full."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.interpreters import ad, batching
from numbax._src.lax.iota import (  # noqa: E402, F401 - re-exported: iota lives there
    broadcasted_iota,
    iota,
    iota_p,
)
from numbax._src.lax.key_arrays import key_array_op

# ----------------------------------------------------------------------------- broadcast_in_dim

broadcast_in_dim_p = Primitive("broadcast_in_dim")


def _broadcast_in_dim_abstract_eval(x: ShapedArray, *, shape, broadcast_dimensions) -> list:
    if len(broadcast_dimensions) != x.ndim:
        raise NumbaxTypeError(
            f"lax.broadcast_in_dim: operand has rank {x.ndim} but broadcast_dimensions "
            f"{broadcast_dimensions} has {len(broadcast_dimensions)} entries; give one "
            "output dimension per operand dimension."
        )
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
            raise ShapeDtypeError(
                f"lax.broadcast_in_dim: operand shape {x.shape} cannot be broadcast to {shape} "
                f"with broadcast_dimensions {broadcast_dimensions} (operand dimension {i})."
            )
    if any(a >= b for a, b in zip(broadcast_dimensions, broadcast_dimensions[1:])):
        raise NumbaxTypeError(f"lax.broadcast_in_dim: broadcast_dimensions {broadcast_dimensions}"
                              " must be distinct (bound as a primitive: increasing).")
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    expanded = np.reshape(x, [x.shape[broadcast_dimensions.index(d)] if d in broadcast_dimensions
                              else 1 for d in range(len(shape))])
    return [np.broadcast_to(expanded, shape)]


def _broadcast_in_dim_transpose(cts, x, *, shape, broadcast_dimensions):
    from numbax._src.lax import reductions

    (ct,) = cts
    aval = x.aval
    new_dims = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    stretched = [d for i, d in enumerate(broadcast_dimensions)
                 if aval.shape[i] == 1 and shape[d] != 1]
    summed = reductions.reduce_sum(ct, tuple(sorted(new_dims + stretched)))
    return [reshape(summed, aval.shape)]


def _broadcast_in_dim_batch(axis_size, vals, dims, *, shape, broadcast_dimensions):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    new_shape = (axis_size, *shape)
    new_dims = (0, *[d + 1 for d in broadcast_dimensions])
    return [broadcast_in_dim(x, new_shape, new_dims)], [0]


core.abstract_eval_rules[broadcast_in_dim_p] = _broadcast_in_dim_abstract_eval
core.impl_rules[broadcast_in_dim_p] = _broadcast_in_dim_impl
ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batching.batch_rules[broadcast_in_dim_p] = _broadcast_in_dim_batch


@key_array_op("operand")
def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    shape = tuple(int(d) for d in shape)
    broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
    if len(set(broadcast_dimensions)) == get_aval(operand).ndim:  # any order, as JAX; the
        operand = transpose(operand, sorted(range(len(broadcast_dimensions)),  # primitive's
                                            key=broadcast_dimensions.__getitem__))  # are sorted
        broadcast_dimensions = tuple(sorted(broadcast_dimensions))
    aval = get_aval(operand)
    if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape,
                                   broadcast_dimensions=broadcast_dimensions)


@key_array_op("operand")
def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
    """lax.broadcast: adds leading dimensions of the given sizes."""
    aval = get_aval(operand)
    sizes = tuple(sizes)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return broadcast_in_dim(operand, sizes + aval.shape, dims)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, weak_type: bool = False):
    """An array of `shape` filled with a scalar (a broadcast of a literal: never materialised
    in compiled code)."""
    from numbax._src.lax.elementwise import convert_element_type

    shape = tuple(int(d) for d in shape)
    if dtype is None:
        aval = get_aval(fill_value)
        dtype, weak_type = aval.dtype, aval.weak_type
    dtype = dtypes.canonicalize_dtype(dtype, context="lax.full")
    if np.ndim(fill_value) != 0:
        raise NumbaxValueError(f"lax.full: fill_value has shape {np.shape(fill_value)}, "
                               "expected a scalar. Use numbax.numpy.broadcast_to for arrays.")
    if isinstance(fill_value, core.Tracer):
        scalar = convert_element_type(fill_value, dtype, weak_type)
    else:
        scalar = np.array(core.concrete_or_error(fill_value, "lax.full"), dtype=dtype)
        scalar = convert_element_type(scalar.item(), dtype, True) if weak_type else scalar
    return broadcast_in_dim_p.bind(scalar, shape=shape, broadcast_dimensions=())


# ----------------------------------------------------------------------------- reshape

reshape_p = Primitive("reshape")


def _reshape_abstract_eval(x: ShapedArray, *, new_sizes, dimensions) -> list:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise ShapeDtypeError(
            f"reshape: cannot reshape an array of shape {x.shape} (size {x.size}) into shape "
            f"{new_sizes} (size {int(np.prod(new_sizes, dtype=np.int64))}); the sizes must "
            "be equal."
        )
    return [ShapedArray(new_sizes, x.dtype, x.weak_type)]


def _reshape_batch(axis_size, vals, dims, *, new_sizes, dimensions):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    return [reshape(x, (axis_size, *new_sizes))], [0]


core.abstract_eval_rules[reshape_p] = _reshape_abstract_eval
core.impl_rules[reshape_p] = lambda x, *, new_sizes, dimensions: [np.reshape(x, new_sizes)]
ad.deflinear(reshape_p, lambda cts, x, **_: [reshape(cts[0], x.aval.shape)])
batching.batch_rules[reshape_p] = _reshape_batch


@key_array_op("operand")
def reshape(operand: Any, new_sizes: Sequence[int], dimensions: None = None) -> Any:
    new_sizes = tuple(int(d) for d in new_sizes)
    if dimensions is not None:
        operand = transpose(operand, tuple(dimensions))
    if get_aval(operand).shape == new_sizes:
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=None)


# ----------------------------------------------------------------------------- transpose

transpose_p = Primitive("transpose")


def _transpose_abstract_eval(x: ShapedArray, *, permutation) -> list:
    if sorted(permutation) != list(range(x.ndim)):
        raise NumbaxValueError(
            f"lax.transpose: permutation {permutation} is not a permutation of the "
            f"{x.ndim} axes of an array of shape {x.shape}."
        )
    return [ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)]


def _transpose_transpose(cts, x, *, permutation):
    return [transpose(cts[0], tuple(np.argsort(permutation).tolist()))]


def _transpose_batch(axis_size, vals, dims, *, permutation):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    return [transpose(x, (0, *[p + 1 for p in permutation]))], [0]


core.abstract_eval_rules[transpose_p] = _transpose_abstract_eval
core.impl_rules[transpose_p] = lambda x, *, permutation: [np.transpose(x, permutation)]
ad.deflinear(transpose_p, _transpose_transpose)
batching.batch_rules[transpose_p] = _transpose_batch


@key_array_op("operand")
def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(get_aval(operand).ndim)):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


# ----------------------------------------------------------------------------- squeeze

squeeze_p = Primitive("squeeze")


def _squeeze_abstract_eval(x: ShapedArray, *, dimensions) -> list:
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise NumbaxValueError(
                f"lax.squeeze: cannot squeeze dimension {d} of an array of shape {x.shape}; "
                "only dimensions of size 1 can be squeezed."
            )
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _squeeze_batch(axis_size, vals, dims, *, dimensions):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    return [squeeze(x, tuple(d + 1 for d in dimensions))], [0]


core.abstract_eval_rules[squeeze_p] = _squeeze_abstract_eval
core.impl_rules[squeeze_p] = lambda x, *, dimensions: [np.squeeze(x, axis=dimensions)]
ad.deflinear(squeeze_p, lambda cts, x, **_: [reshape(cts[0], x.aval.shape)])
batching.batch_rules[squeeze_p] = _squeeze_batch


@key_array_op("array")
def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    ndim = get_aval(array).ndim
    dims = tuple(sorted(int(d) % ndim if ndim else int(d) for d in dimensions))
    if not dims:
        return array
    return squeeze_p.bind(array, dimensions=dims)


@key_array_op("array")
def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Inserts size-1 dimensions (a reshape, as in JAX)."""
    aval = get_aval(array)
    out_ndim = aval.ndim + len(dimensions)
    dims = sorted(int(d) % out_ndim for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, tuple(shape))



def _check_dims(api: str, x: ShapedArray, dims: Sequence[int], what: str = "dimensions") -> None:
    for d in dims:
        if not 0 <= d < x.ndim:
            raise NumbaxValueError(
                f"{api}: {what} has {d}, expected an axis of the operand of shape {x.shape} "
                f"(0 <= axis < {x.ndim}). Pass axes within the operand's rank."
            )


def _canonical_axis(api: str, axis: int, ndim: int) -> int:
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise NumbaxValueError(
            f"{api}: axis is {axis}, expected an axis of an array of rank {ndim}. "
            f"Pass -{ndim} <= axis < {ndim}."
        )
    return axis % ndim if ndim else 0


# ----------------------------------------------------------------------------- rev

rev_p = Primitive("rev")


def _rev_abstract_eval(x: ShapedArray, *, dimensions) -> list:
    _check_dims("lax.rev", x, dimensions)
    if len(set(dimensions)) != len(dimensions):
        raise NumbaxValueError(f"lax.rev: dimensions {dimensions} has repeated entries.")
    return [x]


def _rev_batch(axis_size, vals, dims, *, dimensions):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    return [rev(x, tuple(d + 1 for d in dimensions))], [0]


core.abstract_eval_rules[rev_p] = _rev_abstract_eval
core.impl_rules[rev_p] = lambda x, *, dimensions: [np.flip(x, dimensions) if dimensions else x]
ad.deflinear(rev_p, lambda cts, x, *, dimensions: [rev(cts[0], dimensions)])
batching.batch_rules[rev_p] = _rev_batch


@key_array_op("operand")
def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """lax.rev: reverses the order of elements along `dimensions`."""
    ndim = get_aval(operand).ndim
    dimensions = tuple(sorted(_canonical_axis("lax.rev", d, ndim) for d in dimensions))
    if not dimensions:
        return operand
    return rev_p.bind(operand, dimensions=dimensions)


# ----------------------------------------------------------------------------- slice

slice_p = Primitive("slice")


def _slice_shape(start, limit, strides) -> tuple[int, ...]:
    return tuple(max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides,
                                                                    strict=True))


def _slice_abstract_eval(x: ShapedArray, *, start_indices, limit_indices, strides) -> list:
    for name, v in (("start_indices", start_indices), ("limit_indices", limit_indices),
                    ("strides", strides)):
        if len(v) != x.ndim:
            raise NumbaxTypeError(
                f"lax.slice: {name} has {len(v)} entries {v}, expected one per dimension of "
                f"the operand of shape {x.shape}."
            )
    for axis, (lo, hi, s, n) in enumerate(zip(start_indices, limit_indices, strides, x.shape,
                                               strict=True)):
        if not (0 <= lo <= hi <= n) or s < 1:
            raise NumbaxValueError(
                f"lax.slice: axis {axis} of size {n} has start {lo}, limit {hi}, stride {s}, "
                f"expected 0 <= start <= limit <= {n} and stride >= 1."
            )
    shape = _slice_shape(start_indices, limit_indices, strides)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _slice_impl(x, *, start_indices, limit_indices, strides):
    import builtins

    idx = tuple(builtins.slice(lo, hi, s) for lo, hi, s in zip(start_indices, limit_indices,
                                                               strides, strict=True))
    return [x[idx]]


def _slice_transpose(cts, x, *, start_indices, limit_indices, strides):
    (ct,) = cts
    shape = x.aval.shape
    out_shape = get_aval(ct).shape
    config = []
    for lo, s, n, m in zip(start_indices, strides, shape, out_shape, strict=True):
        used = m + max(m - 1, 0) * (s - 1)
        config.append((lo, n - lo - used, s - 1))
    zero = np.array(0, dtype=get_aval(ct).dtype)
    return [pad(ct, zero, tuple(config))]


def _slice_batch(axis_size, vals, dims, *, start_indices, limit_indices, strides):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    out = slice(x, (0, *start_indices), (axis_size, *limit_indices), (1, *strides))
    return [out], [0]


core.abstract_eval_rules[slice_p] = _slice_abstract_eval
core.impl_rules[slice_p] = _slice_impl
ad.deflinear(slice_p, _slice_transpose)
batching.batch_rules[slice_p] = _slice_batch


@key_array_op("operand")
def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001
          strides: Sequence[int] | None = None) -> Any:
    """lax.slice: the static strided slice operand[start:limit:stride] along every axis."""
    aval = get_aval(operand)
    start = tuple(int(i) for i in start_indices)
    limit = tuple(int(i) for i in limit_indices)
    strides = (1,) * len(start) if strides is None else tuple(int(s) for s in strides)
    if start == (0,) * aval.ndim and limit == aval.shape and strides == (1,) * aval.ndim:
        return operand
    return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=strides)


@key_array_op("operand")
def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    """lax.slice_in_dim: lax.slice along one axis (None and negative bounds as in Python)."""
    aval = get_aval(operand)
    axis = _canonical_axis("lax.slice_in_dim", axis, aval.ndim)
    n = aval.shape[axis]
    lo = 0 if start_index is None else int(start_index)
    hi = n if limit_index is None else int(limit_index)
    lo, hi = (lo + n if lo < 0 else lo), (hi + n if hi < 0 else hi)
    start = [0] * aval.ndim
    limit = list(aval.shape)
    strides = [1] * aval.ndim
    start[axis], limit[axis], strides[axis] = lo, hi, int(stride)
    return slice(operand, start, limit, strides)


@key_array_op("operand")
def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """lax.index_in_dim: element `index` (negative counts from the end) along `axis`."""
    aval = get_aval(operand)
    axis = _canonical_axis("lax.index_in_dim", axis, aval.ndim)
    n = aval.shape[axis]
    index = int(index)
    if not -n <= index < n:
        raise IndexError(
            f"lax.index_in_dim: index {index} is out of bounds for axis {axis} with size {n}."
        )
    index = index % n
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# ----------------------------------------------------------------------------- concatenate

concatenate_p = Primitive("concatenate")


def _concatenate_abstract_eval(*xs: ShapedArray, dimension) -> list:
    if not xs:
        raise NumbaxValueError("lax.concatenate: operands is empty, expected at least one array.")
    x0 = xs[0]
    _check_dims("lax.concatenate", x0, (dimension,), "dimension")
    for i, x in enumerate(xs):
        if x.dtype != x0.dtype:
            raise ShapeDtypeError(
                f"lax.concatenate: operand {i} has dtype {x.dtype}, expected {x0.dtype} like "
                "operand 0. Convert the operands to one dtype first."
            )
        same = x.ndim == x0.ndim and all(a == b for d, (a, b) in enumerate(
            zip(x.shape, x0.shape, strict=True)) if d != dimension)
        if not same:
            raise ShapeDtypeError(
                f"lax.concatenate: operand {i} has shape {x.shape}, expected the shape of "
                f"operand 0 {x0.shape} except along dimension {dimension}."
            )
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return [ShapedArray(tuple(shape), x0.dtype, all(x.weak_type for x in xs))]


def _concatenate_transpose(cts, *xs, dimension):
    (ct,) = cts
    outs, offset = [], 0
    for x in xs:
        size = get_aval(x).shape[dimension] if not ad.is_undefined_primal(x) else x.aval.shape[
            dimension]
        if ad.is_undefined_primal(x):
            outs.append(slice_in_dim(ct, offset, offset + size, 1, dimension))
        else:
            outs.append(None)
        offset += size
    return outs


def _concatenate_batch(axis_size, vals, dims, *, dimension):
    xs = [batching.move_batch_axis(axis_size, d, 0, x) for x, d in zip(vals, dims, strict=True)]
    return [concatenate_p.bind(*xs, dimension=dimension + 1)], [0]


core.abstract_eval_rules[concatenate_p] = _concatenate_abstract_eval
core.impl_rules[concatenate_p] = lambda *xs, dimension: [np.concatenate(xs, axis=dimension)]
ad.deflinear(concatenate_p, _concatenate_transpose)
batching.batch_rules[concatenate_p] = _concatenate_batch


@key_array_op("operands")
def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """lax.concatenate: joins arrays of one dtype along `dimension`."""
    operands = list(operands)
    if not operands:
        raise NumbaxValueError("lax.concatenate: operands is empty, expected at least one array.")
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))


# ----------------------------------------------------------------------------- pad

pad_p = Primitive("pad")


def _pad_shape(shape, padding_config) -> tuple[int, ...]:
    return tuple(lo + hi + n + max(n - 1, 0) * interior
                 for n, (lo, hi, interior) in zip(shape, padding_config, strict=True))


def _pad_abstract_eval(x: ShapedArray, pv: ShapedArray, *, padding_config) -> list:
    if pv.shape != () or pv.dtype != x.dtype:
        raise NumbaxTypeError(
            f"lax.pad: padding_value has {pv.str_short()}, expected a scalar of the operand's "
            f"dtype {x.dtype}. Convert it with lax.convert_element_type."
        )
    if len(padding_config) != x.ndim:
        raise NumbaxValueError(
            f"lax.pad: padding_config has {len(padding_config)} entries, expected one "
            f"(lo, hi, interior) triple per dimension of the operand of shape {x.shape}."
        )
    if any(interior < 0 for _, _, interior in padding_config):
        raise NumbaxValueError(
            f"lax.pad: padding_config {padding_config} has a negative interior padding, "
            "expected interior >= 0."
        )
    shape = _pad_shape(x.shape, padding_config)
    if any(d < 0 for d in shape):
        raise NumbaxValueError(
            f"lax.pad: padding_config {padding_config} gives negative output shape {shape} for "
            f"an operand of shape {x.shape}; negative padding may remove at most the whole axis."
        )
    return [ShapedArray(shape, x.dtype, x.weak_type and pv.weak_type)]


def _pad_impl(x, pv, *, padding_config):
    import builtins

    full_shape = [max(lo, 0) + max(hi, 0) + n + max(n - 1, 0) * interior
                  for n, (lo, hi, interior) in zip(x.shape, padding_config, strict=True)]
    out = np.full(full_shape, pv, dtype=x.dtype)
    place = tuple(builtins.slice(max(lo, 0), max(lo, 0) + n + max(n - 1, 0) * interior,
                                 interior + 1)
                  for n, (lo, _, interior) in zip(x.shape, padding_config, strict=True))
    out[place] = x
    crop = tuple(builtins.slice(max(-lo, 0), d - max(-hi, 0))
                 for d, (lo, hi, _) in zip(full_shape, padding_config, strict=True))
    return [out[crop]]


def _pad_transpose(cts, x, pv, *, padding_config):
    from numbax._src.lax import reductions

    (ct,) = cts
    ct_aval = get_aval(ct)
    zero = np.array(0, dtype=ct_aval.dtype)
    unpadded = pad(ct, zero, tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
    shape = get_aval(unpadded).shape
    ct_x = slice(unpadded, (0,) * len(shape), shape,
                 tuple(interior + 1 for _, _, interior in padding_config))
    everything = tuple(range(ct_aval.ndim))
    outs = [ct_x if ad.is_undefined_primal(x) else None, None]
    if ad.is_undefined_primal(pv):
        from numbax._src.lax import elementwise as ew

        outs[1] = ew.sub(reductions.reduce_sum(ct, everything),
                         reductions.reduce_sum(ct_x, tuple(range(len(shape)))))
    return outs


def _pad_batch(axis_size, vals, dims, *, padding_config):
    from numbax._src.lax import elementwise as ew

    (x, pv), (xd, pd) = vals, dims
    x = batching.move_batch_axis(axis_size, xd, 0, x)
    config = ((0, 0, 0), *padding_config)
    if pd is None:
        return [pad_p.bind(x, pv, padding_config=config)], [0]
    zero = np.array(0, dtype=get_aval(x).dtype)
    padded = pad_p.bind(x, zero, padding_config=config)
    shape = get_aval(padded).shape
    mask = pad(full(get_aval(x).shape[1:], True), np.bool_(False), padding_config)
    mask = broadcast_in_dim(mask, shape, tuple(range(1, len(shape))))
    pv = broadcast_in_dim(batching.moveaxis(pv, pd, 0), shape, (0,))
    return [ew.select(mask, padded, pv)], [0]


core.abstract_eval_rules[pad_p] = _pad_abstract_eval
core.impl_rules[pad_p] = _pad_impl
ad.deflinear(pad_p, _pad_transpose)
batching.batch_rules[pad_p] = _pad_batch


def pad(operand: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Any:
    """lax.pad: pads with (lo, hi, interior) per axis; negative lo/hi crop."""
    config = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    aval = get_aval(operand)
    if isinstance(padding_value, (bool, int, float, complex)):
        padding_value = dtypes.python_scalar_value(padding_value, aval.dtype)
    return pad_p.bind(operand, padding_value, padding_config=config)


# ----------------------------------------------------------------------------- copy

copy_p = Primitive("copy")
core.abstract_eval_rules[copy_p] = lambda x: [x]
core.impl_rules[copy_p] = lambda x: [np.array(x, copy=True)]
ad.deflinear(copy_p, lambda cts, x: [copy_p.bind(cts[0])])
batching.defvectorized(copy_p)
core.avals_only.update({broadcast_in_dim_p, reshape_p, transpose_p, squeeze_p, rev_p, slice_p,
                        concatenate_p, pad_p, copy_p})  # (their rules read avals and params)


def copy(operand: Any) -> Any:
    """lax.copy_p's wrapper: an identity that yields a new buffer."""
    return copy_p.bind(operand)


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """lax.collapse: merges dimensions [start_dimension, stop_dimension) into one."""
    shape = get_aval(operand).shape
    ndim = len(shape)
    lo = _canonical_axis("lax.collapse", start_dimension, ndim)
    hi = ndim if stop_dimension is None else (
        int(stop_dimension) + ndim if int(stop_dimension) < 0 else int(stop_dimension))
    if not lo <= hi <= ndim:
        raise NumbaxValueError(f"lax.collapse: stop_dimension is {stop_dimension}, expected "
                               f"{lo} <= it <= {ndim} for an operand of shape {shape}.")
    size = int(np.prod(shape[lo:hi], dtype=np.int64))
    return reshape(operand, (*shape[:lo], size, *shape[hi:]))
