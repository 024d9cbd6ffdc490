"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, and full."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching

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
            raise NumbaxTypeError(
                f"lax.broadcast_in_dim: operand shape {x.shape} cannot be broadcast to {shape} "
                f"with broadcast_dimensions {broadcast_dimensions} (operand dimension {i})."
            )
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise NumbaxTypeError(
            f"lax.broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be strictly "
            "increasing; transpose the operand first."
        )
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


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    shape = tuple(int(d) for d in shape)
    broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
    aval = get_aval(operand)
    if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape,
                                   broadcast_dimensions=broadcast_dimensions)


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
        raise NumbaxValueError(
            f"lax.full: fill_value has shape {np.shape(fill_value)}, expected a scalar. "
            "Use numbax.numpy.broadcast_to for arrays."
        )
    if isinstance(fill_value, core.Tracer):
        scalar = convert_element_type(fill_value, dtype, weak_type)
    else:
        scalar = np.array(core.concrete_or_error(fill_value, "lax.full"), dtype=dtype)
    return broadcast_in_dim_p.bind(scalar, shape=shape, broadcast_dimensions=())


# ----------------------------------------------------------------------------- reshape

reshape_p = Primitive("reshape")


def _reshape_abstract_eval(x: ShapedArray, *, new_sizes, dimensions) -> list:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise NumbaxTypeError(
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


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and len(permutation) == get_aval(
            operand).ndim:
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


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    ndim = get_aval(array).ndim
    dims = tuple(sorted(int(d) % ndim if ndim else int(d) for d in dimensions))
    if not dims:
        return array
    return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Inserts size-1 dimensions (a reshape, as in JAX)."""
    aval = get_aval(array)
    out_ndim = aval.ndim + len(dimensions)
    dims = sorted(int(d) % out_ndim for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, tuple(shape))

