"""reduce_window: the general monoid primitive (a traced scalar computation applied to every
window) and the public reduce_window, which picks the sum/max/min primitives for their monoids."""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax.convolution import dilate_shape, padtype_to_pads
from numbax._src.lax.windowed_reductions import (
    _WINDOW_PARAMS,
    _check_window,
    _fold,
    _with_unit_window,
    max_identity,
    min_identity,
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_sum_p,
)

# ---------------------------------------------------------------------------- reduce_window_p

# reduce_window_p reduces with a named binary lax primitive (its `computation` param), so its
# params stay plain data; any other computation is composed from pad, slice and the
# computation itself (_reduce_window_composed).
reduce_window_p = Primitive("reduce_window")
_NAMED = {ew.add: "add", ew.mul: "mul", ew.max: "max", ew.min: "min",
          ew.bitwise_and: "and", ew.bitwise_or: "or", ew.bitwise_xor: "xor"}
_BY_NAME = {name: fn for fn, name in _NAMED.items()}


def _reduce_window_abstract_eval(x: ShapedArray, init: ShapedArray, *, computation,
                                 **params) -> list[ShapedArray]:
    if init.dtype != x.dtype or init.shape != ():
        raise NumbaxTypeError(
            f"lax.reduce_window: init_value has {init.str_short()}, expected a scalar of the "
            f"operand's dtype {x.dtype}.")
    core.abstract_eval(core.primitive_by_name(computation), [init, init], {})
    shape = _check_window("reduce_window", x, *(params[k] for k in _WINDOW_PARAMS))
    return [ShapedArray(shape, x.dtype, x.weak_type and init.weak_type)]


def _reduce_window_impl(x, init, *, computation, **params):
    impl = core.impl_rules[core.primitive_by_name(computation)]
    return _fold([x], [np.asarray(init)], lambda acc, s: [np.asarray(impl(acc[0], s[0])[0])],
                 params)


def _reduce_window_jvp(primals, tangents, *, computation, **params):
    """The primal from the primitive; the tangent from the jvp of the composed fold (linear in
    the tangents, so reverse mode works too)."""
    (x, init), (x_dot, init_dot) = primals, tangents
    ans = reduce_window_p.bind(x, init, computation=computation, **params)
    fn = _BY_NAME[computation]

    def fold(x, init):
        (out,) = _reduce_window_composed([x], [init], lambda a, b: [fn(a[0], b[0])], params)
        return [out]

    _, (t_out,) = ad.jvp_flat(fold, [x, init], [x_dot, init_dot])
    return [ans], [t_out]


def _reduce_window_batch(axis_size, vals, dims, *, computation, **params):
    (x, init), (xd, initd) = vals, dims
    if initd is not None:
        raise NotImplementedError(
            "lax.reduce_window: vmap over init_value is not supported (nor in JAX); pass an "
            "unbatched init_value.")
    x = batching.bdim_at_front(x, xd, axis_size)
    return [reduce_window_p.bind(x, init, computation=computation,
                                 **_with_unit_window(params, 0))], [0]


core.abstract_eval_rules[reduce_window_p] = _reduce_window_abstract_eval
core.impl_rules[reduce_window_p] = _reduce_window_impl
ad.jvp_rules[reduce_window_p] = _reduce_window_jvp
batching.batch_rules[reduce_window_p] = _reduce_window_batch


def _trace_computation(computation: Callable, avals: Sequence[ShapedArray]):
    """(jaxpr taking (consts..., args...), consts) of a flat scalar computation."""
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(computation, list(avals))
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), list(consts)


def _reduce_window_composed(xs: Sequence[Any], inits: Sequence[Any], combine: Callable,
                            params: dict) -> list:
    """reduce_window of any (variadic) computation from existing primitives: pad with the
    init values, then fold `combine(acc, slabs)` over one strided slice per window position
    (row-major), starting from the broadcast init values."""
    out_shape = _check_window("reduce_window", get_aval(xs[0]),
                              *(params[k] for k in _WINDOW_PARAMS))
    config = tuple((lo, hi, d - 1) for (lo, hi), d in zip(params["padding"],
                                                          params["base_dilation"]))
    padded = [shape_ops.pad(x, v, config) for x, v in zip(xs, inits)]
    acc = [shape_ops.broadcast_in_dim(v, out_shape, ()) for v in inits]
    if 0 in out_shape:
        return acc
    for offset in np.ndindex(*params["window_dimensions"]):
        start = [o * d for o, d in zip(offset, params["window_dilation"])]
        limit = [b + (m - 1) * s + 1 for b, m, s in zip(start, out_shape,
                                                        params["window_strides"])]
        acc = list(combine(acc, [shape_ops.slice(p, start, limit, params["window_strides"])
                                 for p in padded]))
    return acc


def _elementwise(jaxpr: ClosedJaxpr, consts: Sequence[Any]) -> Callable:
    """The traced scalar computation applied to equal-shape arrays, vmapped over their
    flattened elements (so it need not be written for arrays)."""

    def apply(acc, slabs):
        args = [*acc, *slabs]
        shape = get_aval(args[0]).shape
        size = int(np.prod(shape, dtype=np.int64))
        flat = [shape_ops.reshape(a, (size,)) for a in args]
        outs = batching.vmap_flat(lambda *a: core.eval_jaxpr(jaxpr.jaxpr, [], *consts, *a),
                                  batching.AxisData(size, None), [0] * len(flat),
                                  [0] * len(jaxpr.jaxpr.outvars), flat)
        return [shape_ops.reshape(o, shape) for o in outs]

    return apply


# ----------------------------------------------------------------------------- public API


def _window_args(api: str, shape: Sequence[int], window_dimensions, window_strides, padding,
                 base_dilation, window_dilation) -> dict:
    """The canonical window params (tuples of ints), padding strings resolved."""
    nd = len(shape)

    def ints(name, value):
        if value is None:
            return (1,) * nd
        try:
            out = tuple(operator.index(v) for v in value)
        except TypeError:
            raise NumbaxTypeError(
                f"lax.{api}: {name} has {value!r}, expected a sequence of ints.") from None
        if len(out) != nd:
            raise NumbaxTypeError(
                f"lax.{api}: {name} has {len(out)} entries ({out}) for an operand of shape "
                f"{tuple(shape)}, expected {nd}.")
        return out

    dims = ints("window_dimensions", window_dimensions)
    strides, base, wdil = (ints(name, v) for name, v in (
        ("window_strides", window_strides), ("base_dilation", base_dilation),
        ("window_dilation", window_dilation)))
    if isinstance(padding, str):
        pads = padtype_to_pads(dilate_shape(shape, base), dilate_shape(dims, wdil), strides,
                               padding)
    else:
        try:
            pads = [(operator.index(lo), operator.index(hi)) for lo, hi in padding]
        except (TypeError, ValueError):
            raise NumbaxValueError(
                f"lax.{api}: padding has {padding!r}, expected 'SAME', 'SAME_LOWER', 'VALID' "
                "or (low, high) int pairs.") from None
    return dict(window_dimensions=dims, window_strides=strides,
                padding=tuple((int(lo), int(hi)) for lo, hi in pads), base_dilation=base,
                window_dilation=wdil)


def _monoid_primitive(computation: Callable, inits: Sequence[Any], dtype: np.dtype
                      ) -> Primitive | None:
    """reduce_window_{sum,max,min}_p when the computation is lax.add/max/min with its identity
    as a concrete scalar init_value (JAX's rule), else None."""
    if len(inits) != 1 or isinstance(inits[0], core.Tracer) or np.ndim(inits[0]) != 0:
        return None
    value = core.to_numpy(inits[0])
    if computation is ew.add and value == 0:
        return reduce_window_sum_p
    if computation is ew.max and value == max_identity(dtype):
        return reduce_window_max_p
    if computation is ew.min and value == min_identity(dtype):
        return reduce_window_min_p
    return None


def reduce_window(operand: Any, init_value: Any, computation: Callable,
                  window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding: Any = "VALID", base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduction of every (padded, strided, dilated) window of `operand` by `computation`.

    Args:
      operand: an array or a pytree of arrays of one shape.
      init_value: a scalar (or pytree of scalars, matching operand): the reduction's start.
      computation: a binary scalar function on (pytrees of) values, such as lax.add.
      window_dimensions: the window size per dimension.
      window_strides: the step between windows (None: ones).
      padding: 'VALID', 'SAME', 'SAME_LOWER' or (low, high) pairs, filled with init_value.
      base_dilation: holes between the operand's elements (None: ones).
      window_dilation: holes between a window's elements (None: ones).

    Returns:
      The reduced windows, with operand's tree structure.

    >>> import numpy as np
    >>> from numbax._src.lax.elementwise import mul
    >>> reduce_window(np.arange(1., 6.), np.float64(1), mul, (2,))
    Array([ 2.,  6., 12., 20.], dtype=float64)
    """
    flat_ops, tree = tu.tree_flatten(operand)
    flat_inits, init_tree = tu.tree_flatten(init_value)
    if tree != init_tree or not flat_ops:
        raise NumbaxValueError(
            f"lax.reduce_window: operand has structure {tree} and init_value {init_tree}, "
            "expected one init_value per operand in the same pytree structure.")
    avals = [get_aval(x) for x in flat_ops]
    params = _window_args("reduce_window", avals[0].shape, window_dimensions, window_strides,
                          padding, base_dilation, window_dilation)
    flat_inits = [ew._to_operand(v, x) for v, x in zip(flat_inits, flat_ops)]
    prim = _monoid_primitive(computation, flat_inits, avals[0].dtype)
    if prim is not None:
        return tu.tree_unflatten(tree, [prim.bind(flat_ops[0], **params)])
    if len(flat_ops) == 1 and computation in _NAMED:
        out = reduce_window_p.bind(flat_ops[0], flat_inits[0], computation=_NAMED[computation],
                                   **params)
        return tu.tree_unflatten(tree, [out])
    n = len(flat_ops)
    store: dict[str, Any] = {}

    def flat_computation(*args):
        out = computation(tu.tree_unflatten(tree, args[:n]), tu.tree_unflatten(tree, args[n:]))
        out_flat, store["tree"] = tu.tree_flatten(out)
        return out_flat

    jaxpr, consts = _trace_computation(
        flat_computation, [ShapedArray((), a.dtype) for a in avals] * 2)
    if store["tree"] != tree:
        raise NumbaxTypeError(
            f"lax.reduce_window: computation returned structure {store['tree']}, expected the "
            f"operand's structure {tree}.")
    for i, (v, a) in enumerate(zip(flat_inits, avals)):
        va = get_aval(v)
        if va.shape != () or va.dtype != a.dtype:
            raise NumbaxTypeError(
                f"lax.reduce_window: init_value {i} has {va.str_short()}, expected a scalar of "
                f"its operand's dtype {a.dtype}.")
    outs = _reduce_window_composed(flat_ops, flat_inits, _elementwise(jaxpr, consts), params)
    return tu.tree_unflatten(tree, outs)


def _pool(prim: Primitive, operand: Any, window_dimensions, window_strides, padding) -> Any:
    """A sum/max/min pool with the given window, strides and padding (no dilation)."""
    params = _window_args(prim.name, get_aval(operand).shape, window_dimensions,
                          window_strides, padding, None, None)
    return prim.bind(operand, **params)


def reduce_window_sum(operand, window_dimensions, window_strides=None, padding="VALID"):
    """Sum over windows (reduce_window with lax.add and 0)."""
    return _pool(reduce_window_sum_p, operand, window_dimensions, window_strides, padding)


def reduce_window_max(operand, window_dimensions, window_strides=None, padding="VALID"):
    """Maximum over windows (reduce_window with lax.max and -inf)."""
    return _pool(reduce_window_max_p, operand, window_dimensions, window_strides, padding)


def reduce_window_min(operand, window_dimensions, window_strides=None, padding="VALID"):
    """Minimum over windows (reduce_window with lax.min and +inf)."""
    return _pool(reduce_window_min_p, operand, window_dimensions, window_strides, padding)
