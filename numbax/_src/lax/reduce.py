"""lax.reduce: reduction of one or more operands by a user computation. Recognised monoids
(add with 0, mul with 1, max with -inf, ...) become the matching reduce_* primitive; any
other computation is applied as a pairwise tree (log2(n) rounds of the vmapped computation),
a composition that jit, grad and vmap see through.

Unlike JAX, there is no reduce_p equation holding the computation's jaxpr: jit's eager
fallback cannot carry a jaxpr param yet, and the composition compiles as ordinary kernels."""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import reductions, shape_ops


def _monoid_reducer(computation: Callable, init: Any) -> Callable | None:
    """The reduce_* wrapper for (computation, init) when init is the identity of one."""
    if isinstance(init, core.Tracer) and init.to_concrete_value() is None:
        return None
    value = np.asarray(core.to_numpy(init) if not isinstance(init, core.Tracer)
                       else init.to_concrete_value())
    if value.shape != ():
        return None
    dtype = value.dtype
    if computation is ew.add and value == 0:
        return reductions.reduce_sum
    if computation is ew.mul and value == 1:
        return reductions.reduce_prod
    lowest = -np.inf if kind_of(dtype) == "f" else (np.iinfo(dtype).min if kind_of(dtype) in "iu"
                                                 else False)
    highest = np.inf if kind_of(dtype) == "f" else (np.iinfo(dtype).max if kind_of(dtype) in "iu"
                                                 else True)
    if computation is ew.max and value == lowest:
        return reductions.reduce_max
    if computation is ew.min and value == highest:
        return reductions.reduce_min
    if computation is ew.bitwise_or and kind_of(dtype) in "biu" and value == 0:
        return reductions.reduce_or
    if computation is ew.bitwise_xor and kind_of(dtype) in "biu" and value == 0:
        return reductions.reduce_xor
    if computation is ew.bitwise_and and dtype.kind in "biu" and value == (
            True if dtype.kind == "b" else -1 if dtype.kind == "i" else np.iinfo(dtype).max):
        return reductions.reduce_and
    return None


def _tree_reduce(fun: Callable, operands: list, inits: list, dimensions: tuple) -> list:
    """fun (flat scalars in, flat scalars out; associative, inits its identities) folded over
    `dimensions` of operands: the reduced elements pair up round by round."""
    shape = get_aval(operands[0]).shape
    kept = [d for d in range(len(shape)) if d not in dimensions]
    k = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    m = int(np.prod([shape[d] for d in kept], dtype=np.int64))
    rows = [shape_ops.reshape(shape_ops.transpose(x, (*dimensions, *kept)), (k, m))
            for x in operands]
    n_ops = len(operands)

    def apply(lhs: list, rhs: list) -> list:
        count = get_aval(lhs[0]).shape[0]
        flat = [shape_ops.reshape(x, (count * m,)) for x in (*lhs, *rhs)]
        outs = batching.vmap_flat(lambda *xs: list(fun(*xs)),
                                  batching.AxisData(count * m, None), [0] * (2 * n_ops),
                                  [0] * n_ops, flat)
        return [shape_ops.reshape(o, (count, m)) for o in outs]

    while k > 1:
        half = k // 2
        paired = apply([shape_ops.slice_in_dim(r, 0, half) for r in rows],
                       [shape_ops.slice_in_dim(r, half, 2 * half) for r in rows])
        rows = [shape_ops.concatenate([p, shape_ops.slice_in_dim(r, 2 * half, k)], 0)
                if k % 2 else p for p, r in zip(paired, rows, strict=True)]
        k = half + k % 2
    starts = [shape_ops.broadcast_in_dim(i, (1, m), ()) for i in inits]
    if k == 0:
        rows = starts
    else:
        rows = apply(starts, rows)
    return [shape_ops.reshape(r, tuple(shape[d] for d in kept)) for r in rows]


# ----------------------------------------------------------------------------- lax.reduce


def reduce(operands: Any, init_values: Any, computation: Callable,  # noqa: A001
           dimensions: Sequence[int], out_sharding: Any = None) -> Any:
    """Reduces operands over `dimensions` with `computation`, which with init_values must
    form a monoid (associative, init_values its identity): XLA and numbax may combine the
    elements in any order.

    Args:
      operands: an array or a pytree of arrays of one shape.
      init_values: scalars, in the same pytree structure.
      computation: (accumulated, element) -> accumulated, on pytrees of scalars.
      dimensions: the dimensions to reduce.
      out_sharding: accepted for JAX compatibility; numbax arrays live on one device.

    Returns:
      The reduction, in the structure of operands.

    >>> reduce(np.arange(6.0).reshape(2, 3), 1.0, lambda a, b: a * b, (1,))
    Array([ 0., 60.], dtype=float64)
    """
    flat_ops, tree = tu.tree_flatten(operands)
    flat_inits, init_tree = tu.tree_flatten(init_values)
    if tree != init_tree or len(flat_ops) != len(flat_inits):
        raise NumbaxValueError(
            "Operands must have the same tree structure as init_values: "
            f"{tree} vs. {init_tree}")
    if not flat_ops:
        raise NumbaxValueError("lax.reduce: operands is empty, expected at least one array.")
    shape = get_aval(flat_ops[0]).shape
    for i, x in enumerate(flat_ops):
        if get_aval(x).shape != shape:
            raise NumbaxValueError(
                f"lax.reduce: operand {i} has shape {get_aval(x).shape}, expected every "
                f"operand to have the shape {shape}.")
    if any(not -len(shape) <= operator.index(d) < len(shape) for d in dimensions):
        raise NumbaxValueError(
            f"lax.reduce: dimensions has {tuple(dimensions)}, expected axes of an operand of "
            f"shape {shape}.")
    dims = tuple(sorted({operator.index(d) % len(shape) for d in dimensions}))
    inits = []
    for x, init in zip(flat_ops, flat_inits, strict=True):
        dtype, init_aval = get_aval(x).dtype, get_aval(init)
        if init_aval.shape != ():
            raise NumbaxValueError(
                f"lax.reduce: init_values has an entry of shape {init_aval.shape}, expected "
                "scalars.")
        if init_aval.dtype != dtype and not init_aval.weak_type:
            raise NumbaxTypeError(
                f"lax.reduce: init_values has dtype {init_aval.dtype} for an operand of dtype "
                f"{dtype}; they must match.")
        inits.append(ew.convert_element_type(init, dtype))
    if len(flat_ops) == 1:
        reducer = _monoid_reducer(computation, inits[0])
        if reducer is not None:
            return tu.tree_unflatten(tree, [reducer(flat_ops[0], dims)])

    def flat_computation(*xs):
        n = len(xs) // 2
        out = computation(tu.tree_unflatten(tree, xs[:n]), tu.tree_unflatten(tree, xs[n:]))
        out_flat, out_tree = tu.tree_flatten(out)
        if out_tree != tree:
            raise NumbaxTypeError(
                f"lax.reduce: computation returned the structure {out_tree}, expected that of "
                f"init_values, {tree}.")
        return out_flat

    return tu.tree_unflatten(tree, _tree_reduce(flat_computation, flat_ops, inits, dims))
