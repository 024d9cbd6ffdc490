"""Arrays cut into pieces and joined again: split, stack, unstack and tile, each a linear
primitive (JAX's split_p, stack_p, unstack_p, tile_p)."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import reductions, shape_ops


def _axis(api: str, axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise NumbaxValueError(
            f"lax.{api}: axis {axis} is out of bounds for an array of rank {ndim}.")
    return axis % ndim


def _instantiated(cts: Sequence[Any], avals: Sequence[ShapedArray]) -> list:
    return [ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct
            for ct, a in zip(cts, avals, strict=True)]


# ----------------------------------------------------------------------------- split

split_p = Primitive("split", multiple_results=True)


def _split_abstract_eval(x: ShapedArray, *, sizes, axis) -> list:
    if any(s < 0 for s in sizes):
        raise NumbaxValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if sum(sizes) != x.shape[axis]:
        raise NumbaxValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape "
            f"{list(x.shape)}")
    return [x.update(shape=x.shape[:axis] + (s,) + x.shape[axis + 1:]) for s in sizes]


def _split_impl(x, *, sizes, axis):
    return np.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis)


def _split_transpose(cts, x, *, sizes, axis):
    avals = _split_abstract_eval(x.aval, sizes=sizes, axis=axis)
    return [shape_ops.concatenate(_instantiated(cts, avals), axis)]


def _split_batch(axis_size, vals, dims, *, sizes, axis):
    (x,), (d,) = vals, dims
    outs = split_p.bind(x, axis=axis + (d <= axis), sizes=sizes)
    return outs, [d] * len(outs)


core.abstract_eval_rules[split_p] = _split_abstract_eval
core.impl_rules[split_p] = _split_impl
ad.deflinear(split_p, _split_transpose)
batching.batch_rules[split_p] = _split_batch


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """operand cut along `axis` into consecutive pieces of the given sizes (summing to the
    axis's length).

    >>> [p.shape for p in split(np.zeros((3, 4)), (1, 3), axis=1)]
    [(3, 1), (3, 3)]
    """
    aval = get_aval(operand)
    sizes = tuple(operator.index(s) for s in sizes)
    return split_p.bind(operand, axis=_axis("split", axis, aval.ndim), sizes=sizes)


# ----------------------------------------------------------------------------- stack

stack_p = Primitive("stack")


def _stack_abstract_eval(*xs: ShapedArray, axis) -> list:
    if not xs:
        raise NumbaxValueError("lax.stack: operands is empty, expected at least one array.")
    if any(x.shape != xs[0].shape for x in xs):
        raise NumbaxValueError("All input arrays must have the same shape. Got "
                               f"{', '.join(str(x.shape) for x in xs)}.")
    if any(x.dtype != xs[0].dtype for x in xs):
        raise NumbaxTypeError("lax.stack requires arguments to have the same dtypes, got "
                              f"{', '.join(str(x.dtype) for x in xs)}.")
    shape = xs[0].shape[:axis] + (len(xs),) + xs[0].shape[axis:]
    return [ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))]


def _stack_transpose(cts, *xs, axis):
    pieces = unstack_p.bind(ad.instantiate_zeros(cts[0]), axis=axis)
    return [p if ad.is_undefined_primal(x) else None for p, x in zip(pieces, xs, strict=True)]


def _stack_batch(axis_size, vals, dims, *, axis):
    xs = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]
    return [stack_p.bind(*xs, axis=axis + 1)], [0]


core.abstract_eval_rules[stack_p] = _stack_abstract_eval
core.impl_rules[stack_p] = lambda *xs, axis: [np.stack(xs, axis=axis)]
ad.deflinear(stack_p, _stack_transpose)
batching.batch_rules[stack_p] = _stack_batch


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Arrays of one shape and dtype joined along a new axis.

    >>> stack([np.array([1, 2]), np.array([3, 4])], axis=1)
    Array([[1, 3],
           [2, 4]], dtype=int64)
    """
    operands = list(operands)
    if not operands:
        raise NumbaxValueError("lax.stack: operands is empty, expected at least one array.")
    ndim = get_aval(operands[0]).ndim
    return stack_p.bind(*operands, axis=_axis("stack", axis, ndim + 1))


# ----------------------------------------------------------------------------- unstack

unstack_p = Primitive("unstack", multiple_results=True)


def _unstack_abstract_eval(x: ShapedArray, *, axis) -> list:
    return [x.update(shape=x.shape[:axis] + x.shape[axis + 1:])] * x.shape[axis]


def _unstack_transpose(cts, x, *, axis):
    avals = _unstack_abstract_eval(x.aval, axis=axis)
    return [stack_p.bind(*_instantiated(cts, avals), axis=axis)]


def _unstack_batch(axis_size, vals, dims, *, axis):
    (x,), (d,) = vals, dims
    inner = axis + (d <= axis)
    outs = unstack_p.bind(x, axis=inner)
    return outs, [d if d < inner else d - 1] * len(outs)


core.abstract_eval_rules[unstack_p] = _unstack_abstract_eval
core.impl_rules[unstack_p] = lambda x, *, axis: list(np.moveaxis(x, axis, 0))
ad.deflinear(unstack_p, _unstack_transpose)
batching.batch_rules[unstack_p] = _unstack_batch


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices of x along `axis`, that axis removed (the inverse of stack).

    >>> unstack(np.arange(6).reshape(2, 3), axis=1)[2]
    Array([2, 5], dtype=int64)
    """
    aval = get_aval(x)
    return tuple(unstack_p.bind(x, axis=_axis("unstack", axis, aval.ndim)))


# ----------------------------------------------------------------------------- tile

tile_p = Primitive("tile")


def _tile_abstract_eval(x: ShapedArray, *, reps) -> list:
    if len(reps) != x.ndim:
        raise NumbaxTypeError(
            f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and "
            f"x.ndim={x.ndim}.")
    if any(r < 0 for r in reps):
        raise NumbaxValueError(f"lax.tile: reps has {reps}, expected non-negative repeats.")
    return [x.update(shape=tuple(n * r for n, r in zip(x.shape, reps, strict=True)))]


def _tile_transpose(cts, x, *, reps):
    ct = ad.instantiate_zeros(cts[0])
    split_shape = [d for n, r in zip(x.aval.shape, reps, strict=True) for d in (r, n)]
    parts = shape_ops.reshape(ct, tuple(split_shape))
    return [reductions.reduce_sum(parts, tuple(range(0, 2 * len(reps), 2)))]


def _tile_batch(axis_size, vals, dims, *, reps):
    (x,), (d,) = vals, dims
    reps = reps[:d] + (1,) + reps[d:]
    return [tile_p.bind(x, reps=reps)], [d]


core.abstract_eval_rules[tile_p] = _tile_abstract_eval
core.impl_rules[tile_p] = lambda x, *, reps: [np.tile(x, reps)]
ad.deflinear(tile_p, _tile_transpose)
batching.batch_rules[tile_p] = _tile_batch


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """operand repeated reps[i] times along each dimension i (len(reps) == operand.ndim).

    >>> tile(np.array([[1, 2]]), (2, 2))
    Array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int64)
    """
    return tile_p.bind(operand, reps=tuple(operator.index(r) for r in reps))
