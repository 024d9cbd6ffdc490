"""checkify as a transformation: CheckifyTrace threads an Error through every primitive bound
on its tracers, adding the enabled automatic checks (NaNs made by a primitive, out-of-bounds
gathers/scatters/dynamic slices, division by zero) and the user's check_p; control flow gets
checkified sub-jaxprs that carry the Error in and out (JAX's checkify, as a trace)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.checkify_errors import (
    DivisionByZeroError,
    Error,
    FailedCheckError,
    Metadata,
    NaNError,
    OOBError,
    effect_of,
    new_code,
)
from numbax._src.core import ClosedJaxpr, Trace, Tracer, get_aval
from numbax._src.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p, stop_gradient
from numbax._src.dtypes import kind_of
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise, indexing, scatter
from numbax._src.lax.control_flow.conditionals import cond_p
from numbax._src.lax.control_flow.loops import scan_p, while_p

check_p = core.Primitive("check", multiple_results=True)  # rules in checkify.py


class _State:
    """The Error so far and the enabled categories, held by one CheckifyTrace's main."""

    def __init__(self, error: Error, enabled: frozenset) -> None:
        self.error, self.enabled = error, enabled
        self.outer_dynamic = core._state.dynamic_trace  # restored while binding below


class CheckifyTracer(Tracer):
    __slots__ = ("val",)

    def __init__(self, trace: Trace, val: Any) -> None:
        super().__init__(trace)
        self.val = val

    aval = property(lambda self: get_aval(self.val))

    def to_concrete_value(self) -> Any:
        # abstract, as in JAX: Python control flow on a checked value raises, and indexing
        # with one stays a traced (checked) gather instead of a static index
        return None


class CheckifyTrace(Trace):
    def pure(self, val: Any) -> CheckifyTracer:
        return CheckifyTracer(self, val)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        state: _State = self.main.global_data
        vals = [t.val for t in tracers]
        rule = _rules.get(primitive)
        with core.new_dynamic(state.outer_dynamic):  # (this trace is the dynamic one in f)
            if rule is not None:
                outs = rule(self, state, vals, **params)
            else:
                outs = core.bind(primitive, *vals, **params)
                if primitive in NAN_PRIMITIVES:
                    _check_nans(state, primitive, outs)
        return [CheckifyTracer(self, o) for o in outs]


def run_checkified(fun: Callable[..., Sequence[Any]], enabled: frozenset, error: Error,
                   args: Sequence[Any]) -> tuple[Error, list]:
    """Runs flat `fun` on `args` with checks: (the final Error, the outputs)."""
    # dynamic, as JAX stages f to a jaxpr: primitives on constants and Python scalars (which
    # reach f untouched) are checked too (checkify(jnp.log)(-1.) reports the NaN)
    with core.new_main(CheckifyTrace, _State(error, enabled)) as main, core.new_dynamic(main):
        trace = CheckifyTrace(main)
        outs = fun(*[CheckifyTracer(trace, x) for x in args])
        outs = [core.full_raise(trace, o).val for o in outs]
        return main.global_data.error, outs


# ----------------------------------------------------------------------------- automatic checks

NAN_PRIMITIVES = frozenset(
    core.primitive_by_name(n) for n in (
        "acos acosh add asin asinh atan2 atan atanh bessel_i0e bessel_i1e cbrt "
        "conv_general_dilated cos cosh cumlogsumexp cummax cummin cumprod cumsum digamma "
        "dot_general erf_inv erf erfc exp expm1 fft igamma_grad_a igamma igammac integer_pow "
        "lgamma linear_solve log1p log logistic mul pad pow psum reduce reduce_prod reduce_sum "
        "reduce_window reduce_window_sum regularized_incomplete_beta rem rng_uniform rsqrt sin "
        "sinh sqrt sub tan tanh").split() if n in core._primitives_by_name)


def _check_nans(state: _State, prim: core.Primitive, outs: Sequence[Any]) -> None:
    from numbax._src import jnp

    if NaNError not in state.enabled:
        return
    floats = [o for o in outs if kind_of(get_aval(o).dtype) in "fc"]
    if not floats:
        return
    any_nan = jnp.any(jnp.stack([jnp.any(jnp.isnan(o)) for o in floats]))
    _fail_if(state, any_nan, NaNError, (prim.name,), [])


def _fail_if(state: _State, pred: Any, category: type, static: tuple,
             payload: Sequence[Any]) -> None:
    code = new_code()
    state.error = state.error.update(effect_of(category, payload), pred, code,
                                     Metadata(category, static), payload)


def _div(trace, state: _State, vals, **params):
    from numbax._src import jnp

    if DivisionByZeroError in state.enabled:
        _fail_if(state, jnp.any(jnp.equal(vals[1], 0)), DivisionByZeroError, (), [])
    outs = core.bind(elementwise.div_p, *vals, **params)
    _check_nans(state, elementwise.div_p, outs)
    return outs


def _oob_payload(mask: Any, indices: Any, axes: Sequence[int], shape: tuple) -> Any:
    """[first out-of-bounds index, its axis, that axis' size] (int32), as JAX reports."""
    from numbax._src import jnp

    flat = jnp.argmax(jnp.ravel(mask))
    k = flat % len(axes)
    axis = jnp.asarray(np.asarray(axes, np.int32))[k]
    size = jnp.asarray(np.asarray([shape[a] for a in axes], np.int32))[k]
    index = jnp.ravel(indices)[flat].astype(np.int32)
    return jnp.stack([index, axis, size])


def _check_oob(state: _State, name: str, operand: Any, indices: Any, axes: Sequence[int],
               limits: Any) -> None:
    """indices (last axis: one per entry of `axes`) must lie in [0, limits]."""
    from numbax._src import jnp

    if OOBError not in state.enabled or not axes:
        return
    mask = (indices < 0) | (indices > limits)
    shape = get_aval(operand).shape
    _fail_if(state, jnp.any(mask), OOBError, (name, shape),
             [_oob_payload(mask, indices, axes, shape)])


def _gather(trace, state: _State, vals, *, axes, **params):
    operand, indices = vals
    shape = get_aval(operand).shape
    _check_oob(state, "gather", operand, indices, axes,
               np.asarray([shape[a] - 1 for a in axes]))
    return core.bind(indexing.gather_p, operand, indices, axes=axes, **params)


def _scatter(prim: core.Primitive) -> Callable:
    def rule(trace, state: _State, vals, *, axes, **params):
        operand, indices = vals[0], vals[1]
        shape = get_aval(operand).shape
        _check_oob(state, prim.name, operand, indices, axes,
                   np.asarray([shape[a] - 1 for a in axes]))
        outs = core.bind(prim, *vals, axes=axes, **params)
        _check_nans(state, prim, outs)
        return outs
    return rule


def _dynamic_slice(trace, state: _State, vals, *, slice_sizes):
    from numbax._src import jnp

    operand, starts = vals[0], vals[1:]
    shape = get_aval(operand).shape
    if starts:
        limits = np.asarray([d - s for d, s in zip(shape, slice_sizes, strict=True)])
        _check_oob(state, "dynamic_slice", operand, jnp.stack(starts), range(len(shape)),
                   limits)
    return core.bind(indexing.dynamic_slice_p, *vals, slice_sizes=slice_sizes)


def _dynamic_update_slice(trace, state: _State, vals, **params):
    from numbax._src import jnp

    operand, update, starts = vals[0], vals[1], vals[2:]
    shape, ushape = get_aval(operand).shape, get_aval(update).shape
    if starts:
        limits = np.asarray([d - u for d, u in zip(shape, ushape, strict=True)])
        _check_oob(state, "dynamic_update_slice", operand, jnp.stack(starts),
                   range(len(shape)), limits)
    return core.bind(indexing.dynamic_update_slice_p, *vals, **params)


def _check(trace, state: _State, vals, *, fmt, in_tree, debug, mapped=0):
    """A user check; `mapped` leading axes (a vmap inside checkify) report the first failing
    example's values."""
    from numbax._src import jnp

    if FailedCheckError in state.enabled:
        failed, payload = jnp.logical_not(vals[0]), list(vals[1:])
        if mapped:
            first = jnp.argmax(jnp.ravel(failed))
            lead = get_aval(vals[0]).shape
            payload = [jnp.reshape(p, (-1, *get_aval(p).shape[len(lead):]))[first]
                       for p in payload]
        _fail_if(state, failed, FailedCheckError, (fmt, in_tree), payload)
    return []


# ----------------------------------------------------------------------------- sub-jaxprs


def checkify_closed(closed: ClosedJaxpr, state: _State, error: Error, in_avals: Sequence,
                    in_pos: int, out_pos: int, run: Callable | None = None):
    """`closed` (or `run`, a flat function of its inputs) with the error's leaves inserted at
    input position `in_pos` and output position `out_pos`. Returns (the new ClosedJaxpr,
    the output Error's tree)."""
    leaves, tree = tu.tree_flatten(error)
    n = len(leaves)
    run = run or (lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs))
    store: dict[str, Any] = {}

    def fun(*xs):
        err = tu.tree_unflatten(tree, xs[in_pos:in_pos + n])
        err_out, outs = run_checkified(run, state.enabled, err, [*xs[:in_pos],
                                                                 *xs[in_pos + n:]])
        err_leaves, store["tree"] = tu.tree_flatten(err_out)
        return [*outs[:out_pos], *err_leaves, *outs[out_pos:]]

    avals = [*in_avals[:in_pos], *[get_aval(x) for x in leaves], *in_avals[in_pos:]]
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(fun, avals)
    return pe.hoist_consts(ClosedJaxpr(jaxpr, consts)), store["tree"]


def _effects(tree: tu.PyTreeDef) -> tuple:
    return tu.tree_unflatten(tree, [np.zeros(())] * tree.num_leaves).effects()


def _stable(build: Callable[[Error], tuple], error: Error) -> tuple[Error, Any]:
    """Builds a checkified body whose output Error has the structure of its input one: the
    input gets placeholders for every kind of error the body can add (content-addressed
    effects, so a second pass adds no new ones)."""
    for _ in range(3):
        result = build(error)
        effects = _effects(result[-1])
        if set(effects) <= set(error.effects()):
            return error, result
        error = error.with_effects(effects)
    raise AssertionError("checkify: a loop body's error structure did not settle")


def _with_meta(error: Error, trees: Sequence[tu.PyTreeDef], leaves: Sequence[Any]) -> Error:
    """The Error of `leaves` (structured as `error`), knowing the messages of all `trees`."""
    meta = dict(error._metadata)
    for tree in trees:
        meta.update(tu.tree_unflatten(tree, [np.zeros(())] * tree.num_leaves)._metadata)
    out = tu.tree_unflatten(tu.tree_structure(error), list(leaves))
    return Error(out._pred, out._code, out._payload, meta)


def _cond(trace, state: _State, vals, *, branches):
    index, ops = vals[0], vals[1:]
    avals = [get_aval(x) for x in ops]

    def build(err):
        built = [checkify_closed(b, state, err, avals, 0, 0) for b in branches]
        effects = set().union(*(_effects(t) for _, t in built))
        return built, effects, built[0][1]

    error = state.error
    built, effects, _ = build(error)
    error = error.with_effects(effects)
    built, _, _ = build(error)
    leaves = tu.tree_leaves(error)
    outs = core.bind(cond_p, index, *leaves, *ops, branches=tuple(b for b, _ in built))
    state.error = _with_meta(error, [t for _, t in built], outs[:len(leaves)])
    return outs[len(leaves):]


def _scan(trace, state: _State, vals, *, jaxpr, num_consts, num_carry, **params):
    avals = list(jaxpr.in_avals)  # per iteration
    error, (body, tree) = _stable(
        lambda err: checkify_closed(jaxpr, state, err, avals, num_consts, 0), state.error)
    leaves = tu.tree_leaves(error)
    outs = core.bind(scan_p, *vals[:num_consts], *leaves, *vals[num_consts:], jaxpr=body,
                     num_consts=num_consts, num_carry=num_carry + len(leaves), **params)
    state.error = _with_meta(error, [tree], outs[:len(leaves)])
    return outs[len(leaves):]


def _while(trace, state: _State, vals, *, cond_jaxpr, body_jaxpr, cond_nconsts,
           body_nconsts):
    """The body also runs the condition's checks on its new carry; the condition itself runs
    unchecked (its checks ran on the initial carry before the loop, here)."""
    n_c = cond_nconsts
    cc, bc, init = vals[:n_c], vals[n_c:n_c + body_nconsts], vals[n_c + body_nconsts:]
    core.eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts,
                    *[CheckifyTracer(trace, x) for x in (*cc, *init)])  # its checks, once

    def body_then_cond(*xs):
        outs = core.eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *xs[n_c:])
        core.eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *xs[:n_c], *outs)
        return outs

    avals = [get_aval(x) for x in vals]
    error, (body, tree) = _stable(
        lambda err: checkify_closed(body_jaxpr, state, err, avals, n_c + body_nconsts, 0,
                                    run=body_then_cond), state.error)
    leaves = tu.tree_leaves(error)
    unchecked = _State(error, frozenset())
    cond, _ = checkify_closed(cond_jaxpr, unchecked, error, [get_aval(x) for x in
                                                             (*cc, *init)], n_c, 0)
    n = len(leaves)
    cond = ClosedJaxpr(core.Jaxpr(cond.jaxpr.constvars, cond.jaxpr.invars, cond.jaxpr.eqns,
                                  cond.jaxpr.outvars[n:]), cond.consts)  # only the predicate
    # the body reads the condition's consts too: they lead its consts
    outs = core.bind(while_p, *cc, *cc, *bc, *leaves, *init, cond_jaxpr=cond,
                     body_jaxpr=body, cond_nconsts=n_c, body_nconsts=n_c + body_nconsts)
    state.error = _with_meta(error, [tree], outs[:n])
    return outs[n:]


def _custom_call(prim: core.Primitive) -> Callable:
    """A custom_jvp/custom_vjp call: its checks run on its jaxpr; when a differentiation may
    be around (a JVP or partial-eval value), the call itself is bound as well, so its
    custom rule still gives the derivative."""
    def rule(trace, state: _State, vals, **params):
        call = params["call_jaxpr"]
        plain = all(not isinstance(v, Tracer) or isinstance(v, pe.DynamicJaxprTracer)
                    for v in vals)
        inputs = vals if plain else [stop_gradient(v) for v in vals]
        outs = core.eval_jaxpr(call.jaxpr, call.consts,
                               *[CheckifyTracer(trace, v) for v in inputs])
        if plain:
            return [core.full_raise(trace, o).val for o in outs]
        return core.bind(prim, *vals, **params)
    return rule


def _inline(param: str) -> Callable:
    def rule(trace, state: _State, vals, **params):
        sub = params[param]
        jaxpr, consts = (sub.jaxpr, sub.consts) if isinstance(sub, ClosedJaxpr) else (sub, [])
        outs = core.eval_jaxpr(jaxpr, consts, *[CheckifyTracer(trace, v) for v in vals])
        return [core.full_raise(trace, o).val for o in outs]
    return rule


_rules: dict[core.Primitive, Callable] = {
    elementwise.div_p: _div,
    indexing.gather_p: _gather,
    indexing.dynamic_slice_p: _dynamic_slice,
    indexing.dynamic_update_slice_p: _dynamic_update_slice,
    check_p: _check,
    cond_p: _cond,
    scan_p: _scan,
    while_p: _while,
    custom_jvp_call_p: _custom_call(custom_jvp_call_p),
    custom_vjp_call_p: _custom_call(custom_vjp_call_p),
}
for _prim in (scatter.scatter_p, scatter.scatter_add_p, scatter.scatter_sub_p,
              scatter.scatter_mul_p, scatter.scatter_min_p, scatter.scatter_max_p):
    _rules[_prim] = _scatter(_prim)


def _register_checkpoint() -> None:
    from numbax._src.checkpoint import checkpoint_p

    _rules[checkpoint_p] = _inline("jaxpr")


_register_checkpoint()
