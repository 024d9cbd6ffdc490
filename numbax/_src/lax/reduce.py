"""lax.reduce: reduction of one or more operands by a user computation. Recognised monoids
(lax.add with 0, lax.mul with 1, lax.max with -inf, ...) become the matching reduce_*
primitive, as in JAX; any other computation binds `reduce_p` (JAX's `reduce`), holding the
computation's jaxpr on scalars. Its implementation, derivative and compiled form apply the
computation as a pairwise tree (log2(n) rounds of the vmapped computation)."""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise as ew
from numbax._src.lax import reductions, shape_ops
from numbax._src.lax.control_flow import common


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


# ----------------------------------------------------------------------------- reduce_p


class Computation:
    """reduce_p's `computation` param: the user's function, printed as JAX prints it. It
    pickles as its description alone (the equation's `jaxpr` is what runs), so a program
    holding a lambda still ships to the SPMD workers."""

    __slots__ = ("fn", "text")

    def __init__(self, fn: Callable | None, text: str | None = None) -> None:
        self.fn, self.text = fn, text if text is not None else str(fn)

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Computation) and (
            self.fn is other.fn if self.fn is not None else self.text == other.text)

    def __hash__(self) -> int:
        return hash(self.text)

    def __reduce__(self) -> tuple:
        return Computation, (None, self.text)


reduce_p = Primitive("reduce", multiple_results=True)


def _scalar_fun(jaxpr: ClosedJaxpr) -> Callable:
    return lambda *xs: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs)


def _reduce_abstract_eval(*avals: ShapedArray, computation, jaxpr, dimensions) -> list:
    n = len(avals) // 2
    return [ShapedArray(tuple(d for i, d in enumerate(a.shape) if i not in dimensions),
                        a.dtype) for a in avals[:n]]


def _reduce_composed(*args: Any, jaxpr: ClosedJaxpr, dimensions: tuple) -> list:
    """reduce_p as the pairwise tree of its computation (impl, jvp and compiled form)."""
    n = len(args) // 2
    return _tree_reduce(_scalar_fun(jaxpr), list(args[:n]), list(args[n:]), dimensions)


def _reduce_impl(*args, computation, jaxpr, dimensions) -> list:
    return _reduce_composed(*args, jaxpr=jaxpr, dimensions=dimensions)


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
    return ad.jvp_flat(lambda *xs: _reduce_composed(*xs, jaxpr=jaxpr, dimensions=dimensions),
                       list(primals), list(tangents))


def _reduce_batch(axis_size, vals, dims, *, computation, jaxpr, dimensions):
    n = len(vals) // 2
    if any(d is not None for d in dims[n:]):  # a batched init: the tree, vmapped
        outs = batching.vmap_flat(
            lambda *xs: _reduce_composed(*xs, jaxpr=jaxpr, dimensions=dimensions),
            batching.AxisData(axis_size, None), list(dims), [0] * n, list(vals))
        return outs, [0] * n
    operands = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals[:n], dims[:n])]
    outs = reduce_p.bind(*operands, *vals[n:], computation=computation, jaxpr=jaxpr,
                         dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * n


def expand_reduce(eqn: core.JaxprEqn) -> ClosedJaxpr:
    """A reduce equation as the equations of its pairwise tree (the compiler's expansion)."""
    avals = [x.aval for x in eqn.invars]
    return pe.trace_to_closed_jaxpr(
        lambda *xs: _reduce_composed(*xs, jaxpr=eqn.params["jaxpr"],
                                     dimensions=eqn.params["dimensions"]), avals)


core.abstract_eval_rules[reduce_p] = _reduce_abstract_eval
core.impl_rules[reduce_p] = _reduce_impl
ad.jvp_rules[reduce_p] = _reduce_jvp
batching.batch_rules[reduce_p] = _reduce_batch


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
        if out_tree != tree:  # JAX's class (its lowering's ValueError)
            raise NumbaxValueError(
                f"lax.reduce: computation returned the structure {out_tree}, expected that of "
                f"init_values, {tree}. Return one value per operand.")
        return [ew.convert_element_type(o, get_aval(x).dtype)
                for o, x in zip(out_flat, flat_ops, strict=True)]

    scalars = [ShapedArray((), get_aval(x).dtype) for x in flat_ops]
    pair_tree = tu.tree_structure(tuple(range(2 * len(flat_ops))))
    closed, consts, _ = common.trace_subjaxpr(flat_computation, pair_tree, scalars * 2)
    if any(isinstance(c, core.Tracer) for c in consts):
        # Unlike JAX (NotImplementedError): a computation closing over traced values is
        # applied as the tree directly, with those values in its closure
        return tu.tree_unflatten(tree, _tree_reduce(flat_computation, flat_ops, inits, dims))
    outs = reduce_p.bind(*flat_ops, *inits, computation=Computation(computation),
                         jaxpr=_close(closed, consts), dimensions=dims)
    return tu.tree_unflatten(tree, outs)


def _close(closed: ClosedJaxpr, consts: list) -> ClosedJaxpr:
    """The traced computation (consts as leading inputs) with its consts closed over again."""
    jaxpr = closed.jaxpr
    n = len(consts)
    return ClosedJaxpr(core.Jaxpr(list(jaxpr.invars[:n]), list(jaxpr.invars[n:]), jaxpr.eqns,
                                  jaxpr.outvars), [core.to_numpy(c) for c in consts])
