"""Loops: scan (and map, a scan with no carry), while_loop, fori_loop.

`map` is not a primitive of its own: it is `scan` with an empty carry, whose iterations are
independent, so the compiler emits it as a prange loop. Batching rules use it to run
per-example control flow (a batched while predicate runs each example's own trip count).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes, host_eval
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import common

# ----------------------------------------------------------------------------- scan

scan_p = Primitive("scan", multiple_results=True)


def _split(seq, *sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(seq[start:start + n]))
        start += n
    out.append(list(seq[start:]))
    return out


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    for i, x in enumerate(xs):
        if x.ndim == 0 or x.shape[0] != length:
            raise NumbaxValueError(
                f"scan: xs leaf {i} has shape {x.shape}, expected a leading axis of length "
                f"{length}.")
    carry_out, ys = _split(jaxpr.out_avals, num_carry)
    return [*[c.update(weak_type=c.weak_type and ci.weak_type)
              for c, ci in zip(carry_out, carry, strict=True)],
            *[y.update(shape=(length, *y.shape)) for y in ys]]


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = _split(args, num_consts, num_carry)
    ys_per_step = []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    body = _eager_body(jaxpr, args)
    for i in steps:
        outs = body(*consts, *carry, *[x[i] for x in xs])
        carry, ys = outs[:num_carry], outs[num_carry:]
        ys_per_step.append([np.asarray(y) for y in ys])
    if reverse:
        ys_per_step.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacked = [np.stack([step[j] for step in ys_per_step]) if length else
               np.empty((0, *a.shape), a.dtype) for j, a in enumerate(y_avals)]
    return [*carry, *stacked]


def _scan_batch(axis_data, vals, dims, *, jaxpr, num_consts, num_carry, length, reverse,
                unroll):
    axis_size = axis_data.size
    b = [d is not None for d in dims]
    const_b, carry_b, xs_b = _split(b, num_consts, num_carry)
    n_ys = len(jaxpr.out_avals) - num_carry
    while True:
        _, out_b = batching.batch_jaxpr(jaxpr, axis_data, const_b + carry_b + xs_b,
                                        carry_b + [False] * n_ys)
        grown = [x or y for x, y in zip(carry_b, out_b[:num_carry], strict=True)]
        if grown == carry_b:
            break
        carry_b = grown
    batched, out_b = batching.batch_jaxpr(jaxpr, axis_data, const_b + carry_b + xs_b,
                                          carry_b + [False] * n_ys)
    consts, carry, xs = _split(list(zip(vals, dims)), num_consts, num_carry)
    new_consts = [batching.moveaxis(v, d, 0) if d is not None else v for v, d in consts]
    new_carry = [batching.move_batch_axis(axis_size, d, 0, v) if cb else v
                 for (v, d), cb in zip(carry, carry_b, strict=True)]
    new_xs = [batching.moveaxis(v, d, 1) if d is not None else v for v, d in xs]
    outs = scan_p.bind(*new_consts, *new_carry, *new_xs, jaxpr=batched, num_consts=num_consts,
                       num_carry=num_carry, length=length, reverse=reverse, unroll=unroll)
    out_dims = [0 if x else None for x in out_b[:num_carry]]
    out_dims += [1 if x else None for x in out_b[num_carry:]]
    return outs, out_dims


core.abstract_eval_rules[scan_p] = _scan_abstract_eval
core.impl_rules[scan_p] = _scan_impl
batching.def_body_rule(scan_p, _scan_batch)


def map_batched(axis_size: int, prim: Primitive, vals: list, dims: list, params: dict):
    """Batches `prim` by running it once per example: a scan with an empty carry (a `map`,
    compiled as a prange loop), so each example follows its own control flow."""
    batched = [d is not None for d in dims]
    consts = [v for v, b in zip(vals, batched, strict=True) if not b]
    xs = [batching.moveaxis(v, d, 0) for v, d in zip(vals, dims, strict=True) if d is not None]
    avals = [core.get_aval(c) for c in consts]
    avals += [core.get_aval(x).update(shape=core.get_aval(x).shape[1:]) for x in xs]

    def body(*args):
        cs, xe = iter(args[:len(consts)]), iter(args[len(consts):])
        operands = [next(xe) if b else next(cs) for b in batched]
        return core.bind(prim, *operands, **params)

    jaxpr, body_consts = pe.trace_to_jaxpr_dynamic(body, avals)
    closed = pe.hoist_consts(ClosedJaxpr(jaxpr, body_consts))
    outs = scan_p.bind(*consts, *xs, jaxpr=closed, num_consts=len(consts), num_carry=0,
                       length=axis_size, reverse=False, unroll=1)
    return outs, [0] * len(outs)


# ----------------------------------------------------------------------------- while_loop

while_p = Primitive("while", multiple_results=True)


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    return list(body_jaxpr.out_avals)


def while_steps(args: Sequence[Any], limit: float, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                body_nconsts) -> tuple[list, bool]:
    """At most `limit` eager steps of a while loop on its operands: (the operands after them,
    whether the condition ended the loop)."""
    cond_consts, body_consts, carry = _split(args, cond_nconsts, body_nconsts)
    cond, body = _eager_body(cond_jaxpr, args), _eager_body(body_jaxpr, args)
    steps = 0
    while bool(np.asarray(cond(*cond_consts, *carry)[0])):
        if steps >= limit:
            return [*cond_consts, *body_consts, *carry], False
        carry = body(*body_consts, *carry)
        steps += 1
    return [*cond_consts, *body_consts, *carry], True


def _eager_body(closed: ClosedJaxpr, operands: Sequence[Any]) -> Callable[..., list]:
    """`closed` as a function for an eager loop's steps: equation by equation through their
    implementations on numpy values where it can (host_eval.py: same bits, ~10x less time
    an equation), else through eval_jaxpr."""
    fast = None if any(isinstance(x, core.Tracer) for x in operands) else \
        host_eval.evaluator(closed, (scan_p, while_p))
    return fast or (lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs))


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    operands, _ = while_steps(args, math.inf, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                              cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    return operands[cond_nconsts + body_nconsts:]


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nz = [type(t) is not ad.Zero for t in tangents]
    _, bconst_nz, carry_nz = _split(nz, cond_nconsts, body_nconsts)
    while True:
        _, out_nz = ad.jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)
        grown = [a or b for a, b in zip(carry_nz, out_nz, strict=True)]
        if grown == carry_nz:
            break
        carry_nz = grown
    body_jvp, _ = ad.jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)
    nb, ncarry = body_nconsts, len(carry_nz)
    nbt, nct = sum(bconst_nz), sum(carry_nz)
    p_b, p_c, t_b, t_c = _split(list(range(nb + ncarry + nbt + nct)), nb, ncarry, nbt)
    body_jvp = common.permute_jaxpr(body_jvp, in_order=[*p_b, *t_b, *p_c, *t_c])
    carry_t_avals = [ad.tangent_aval(a) for a, z in zip(body_jaxpr.out_avals, carry_nz,
                                                          strict=True) if z]
    cond_jvp = common.insert_unused_inputs(cond_jaxpr, cond_nconsts + ncarry, carry_t_avals)
    cond_consts, body_consts, carry = _split(primals, cond_nconsts, body_nconsts)
    _, bconst_t, carry_t = _split(tangents, cond_nconsts, body_nconsts)
    bconst_t = [t for t in bconst_t if type(t) is not ad.Zero]
    carry_t = [ad.instantiate_zeros(t) for t, z in zip(carry_t, carry_nz, strict=True) if z]
    outs = while_p.bind(*cond_consts, *body_consts, *bconst_t, *carry, *carry_t,
                        cond_jaxpr=cond_jvp, body_jaxpr=body_jvp, cond_nconsts=cond_nconsts,
                        body_nconsts=nb + nbt)
    carry_out, carry_t_out = outs[:ncarry], iter(outs[ncarry:])
    tangents_out = [next(carry_t_out) if z else ad.Zero(ad.tangent_aval(core.get_aval(c)))
                    for c, z in zip(carry_out, carry_nz, strict=True)]
    return carry_out, tangents_out


def _while_partial_eval(trace, tracers, **params):
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic start/stop values. Try using lax.scan, or lax.fori_loop with constant "
        "start/stop (forward mode, numbax.jvp / jacfwd, works with while_loop)."
    )


def _while_batch(axis_data, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                  body_nconsts=body_nconsts)
    axis_size = axis_data.size
    b = [d is not None for d in dims]
    cconst_b, bconst_b, carry_b = _split(b, cond_nconsts, body_nconsts)
    while True:
        _, out_b = batching.batch_jaxpr(body_jaxpr, axis_data, bconst_b + carry_b, carry_b)
        grown = [x or y for x, y in zip(carry_b, out_b, strict=True)]
        if grown == carry_b:
            break
        carry_b = grown
    _, (pred_b,) = batching.batch_jaxpr(cond_jaxpr, axis_data, cconst_b + carry_b, False)
    if pred_b:
        # Each example runs its own trip count: a map (prange) over per-example loops.
        if batching.names_axis_inside(params, axis_data.name):
            return _while_in_lockstep(axis_data, vals, dims, **params)
        return map_batched(axis_size, while_p, vals, dims, params)
    cond_b, _ = batching.batch_jaxpr(cond_jaxpr, axis_data, cconst_b + carry_b, False)
    body_b, _ = batching.batch_jaxpr(body_jaxpr, axis_data, bconst_b + carry_b, carry_b)
    cconsts, bconsts, carry = _split(list(zip(vals, dims)), cond_nconsts, body_nconsts)
    move = [batching.moveaxis(v, d, 0) if d is not None else v for v, d in cconsts + bconsts]
    new_carry = [batching.move_batch_axis(axis_size, d, 0, v) if cb else v
                 for (v, d), cb in zip(carry, carry_b, strict=True)]
    outs = while_p.bind(*move, *new_carry, cond_jaxpr=cond_b, body_jaxpr=body_b,
                        cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    return outs, [0 if x else None for x in carry_b]


def _while_in_lockstep(axis_data, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                       body_nconsts):
    """A while_loop whose condition differs between examples and whose body has a collective
    over the vmapped axis: every example steps while any example's condition holds, and one
    whose condition is false keeps its carry (JAX's form), so the collective sees the whole
    axis on every step."""
    from numbax._src.lax import reductions, select, shape_ops

    vals = [batching.bdim_at_front(x, d, axis_data.size) for x, d in zip(vals, dims,
                                                                         strict=True)]
    cconsts, bconsts, carry = _split(vals, cond_nconsts, body_nconsts)
    n_cc, n_bc = len(cconsts), len(bconsts)
    cond_b, _ = batching.batch_jaxpr(cond_jaxpr, axis_data, [True] * (n_cc + len(carry)), True)
    body_b, _ = batching.batch_jaxpr(body_jaxpr, axis_data, [True] * (n_bc + len(carry)), True)

    def going(cc, c):  # each example's own condition
        return core.eval_jaxpr(cond_b.jaxpr, cond_b.consts, *cc, *c)[0]

    def cond(*args):
        return [reductions.reduce_or(going(args[:n_cc], args[n_cc:]), (0,))]

    def body(*args):
        cc, bc, c = args[:n_cc], args[n_cc:n_cc + n_bc], args[n_cc + n_bc:]
        keep = going(cc, c)
        stepped = core.eval_jaxpr(body_b.jaxpr, body_b.consts, *bc, *c)
        return [select.select_n(shape_ops.broadcast_in_dim(keep, core.get_aval(new).shape,
                                                           (0,)), old, new)
                for old, new in zip(c, stepped, strict=True)]

    avals = [core.get_aval(x) for x in vals]
    cond_jaxpr, cond_consts = pe.trace_to_jaxpr_dynamic(cond, avals[:n_cc] + avals[n_cc + n_bc:])
    body_jaxpr, body_consts = pe.trace_to_jaxpr_dynamic(body, avals)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry,
                        cond_jaxpr=pe.hoist_consts(ClosedJaxpr(cond_jaxpr, cond_consts)),
                        body_jaxpr=pe.hoist_consts(ClosedJaxpr(body_jaxpr, body_consts)),
                        cond_nconsts=n_cc, body_nconsts=n_cc + n_bc)
    return outs, [0] * len(outs)


core.abstract_eval_rules[while_p] = _while_abstract_eval
core.impl_rules[while_p] = _while_impl
ad.jvp_rules[while_p] = _while_jvp
pe.partial_eval_rules[while_p] = _while_partial_eval
batching.def_body_rule(while_p, _while_batch)

# ----------------------------------------------------------------------------- public API


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """Runs body_fun while cond_fun(carry) is true; a traced carry stays one primitive.

    >>> import numbax
    >>> int(numbax.lax.while_loop(lambda i: i < 10, lambda i: i + 3, 0))
    12
    """
    init_flat, in_tree = tu.tree_flatten(init_val)
    args_tree = tu.tree_structure((init_val,))

    def trace(avals):
        cond_j, cond_consts, _ = common.trace_subjaxpr(cond_fun, args_tree, avals)
        pred = cond_j.out_avals
        if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != dtypes.bool_:
            shown = ", ".join(a.str_short() for a in pred)
            raise NumbaxTypeError(
                f"while_loop: cond_fun must return a boolean scalar, got ({shown}).")
        return cond_j, cond_consts, *common.trace_subjaxpr(body_fun, args_tree, avals)

    avals = common.carry_avals(init_flat)
    cond_j, cond_consts, body_j, body_consts, body_tree = trace(avals)
    promoted = common.promote_weak_inits(init_flat, avals, body_j.out_avals)
    if promoted is not None:
        init_flat, avals = promoted, common.carry_avals(promoted)
        cond_j, cond_consts, body_j, body_consts, body_tree = trace(avals)
    common.check_carry("while_loop", in_tree, avals, body_tree, body_j.out_avals,
                       "body_fun output")
    body_j = common.cast_weak_outputs(body_j, avals)
    outs = while_p.bind(*cond_consts, *body_consts, *init_flat, cond_jaxpr=cond_j,
                        body_jaxpr=body_j, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))
    return tu.tree_unflatten(in_tree, outs)


def _check_length(length: Any) -> int:
    """scan's `length` as an int: a non-negative integer (a concrete one under tracing)."""
    if isinstance(length, core.Tracer):
        length = core.concrete_or_error(length, "scan length")
    kind = getattr(getattr(length, "dtype", None), "kind", None)
    integer = isinstance(length, int) or (kind in "iu" and np.ndim(length) == 0 if kind else False)
    if not integer or isinstance(length, bool):
        raise NumbaxTypeError(
            f"scan: length has {length!r} of type {type(length).__name__}, expected a "
            "non-negative integer (the number of steps). Pass an int, e.g. length=int(n).")
    length = int(length)
    if length < 0:
        raise NumbaxValueError(
            f"scan: length has {length}, expected a non-negative integer (the number of "
            "steps). Pass length >= 0.")
    return length


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int = 1) -> tuple[Any, Any]:
    """Loops f(carry, x) -> (carry, y) over the leading axis of xs, stacking the ys.

    >>> import numbax, numpy as np
    >>> carry, ys = numbax.lax.scan(lambda c, x: (c + x, c), 0.0, np.arange(4.0))
    >>> float(carry), ys.tolist()
    (6.0, [0.0, 0.0, 1.0, 3.0])
    """
    if not callable(f):
        raise NumbaxTypeError(f"scan: f must be callable, got {type(f).__name__}.")
    init_flat, init_tree = tu.tree_flatten(init)
    xs_flat, xs_tree = tu.tree_flatten(xs)
    lengths = {core.get_aval(x).shape[0] for x in xs_flat if core.get_aval(x).ndim}
    for i, x in enumerate(xs_flat):
        if core.get_aval(x).ndim == 0:
            raise NumbaxValueError(
                f"scan: xs leaf {i} is a scalar; every xs leaf needs a leading axis to scan "
                "over.")
    if length is not None:
        lengths.add(_check_length(length))
    if len(lengths) > 1:
        raise NumbaxValueError(
            f"scan: the xs leaves and length disagree on the number of steps: "
            f"{sorted(lengths)}. Give every xs leaf the same leading axis length.")
    if not lengths:
        raise NumbaxValueError("scan: give xs with a leading axis, or length=, to know the "
                               "number of steps.")
    n = lengths.pop()
    x_avals = [core.get_aval(x).update(shape=core.get_aval(x).shape[1:]) for x in xs_flat]
    in_tree = tu.tree_structure((init, xs if xs is not None else None))

    def trace(carry_avals):
        return common.trace_subjaxpr(lambda c, x: _check_pair(f(c, x)), in_tree,
                                     [*carry_avals, *x_avals])

    carry_avals = common.carry_avals(init_flat)
    closed, consts, out_tree = trace(carry_avals)
    promoted = common.promote_weak_inits(init_flat, carry_avals,
                                         closed.out_avals[:len(carry_avals)])
    if promoted is not None:
        init_flat, carry_avals = promoted, common.carry_avals(promoted)
        closed, consts, out_tree = trace(carry_avals)
    carry_tree, ys_tree = _pair_trees(out_tree)
    common.check_carry("scan", init_tree, carry_avals, carry_tree,
                       closed.out_avals[:len(carry_avals)], "the carry returned by f")
    closed = common.cast_weak_outputs(closed, carry_avals, start=0)
    if isinstance(unroll, bool):  # JAX's meaning: True unrolls every step
        unroll = max(n, 1) if unroll else 1
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=closed, num_consts=len(consts),
                       num_carry=len(init_flat), length=n, reverse=bool(reverse),
                       unroll=int(unroll))
    carry_out = tu.tree_unflatten(init_tree, outs[:len(init_flat)])
    return carry_out, tu.tree_unflatten(ys_tree, outs[len(init_flat):])


def _check_pair(out: Any) -> Any:
    if not (isinstance(out, tuple) and len(out) == 2):
        raise NumbaxTypeError(
            "scan: f must return a pair (new_carry, y); got "
            f"{type(out).__name__}{' of length ' + str(len(out)) if isinstance(out, tuple) else ''}.")  # noqa: E501
    return out


def _pair_trees(out_tree: tu.PyTreeDef):
    return out_tree.children[0], out_tree.children[1]


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """f applied to each slice of xs along its leading axis, results stacked (lax.map).
    Iterations are independent: compiled, a prange loop; batch_size vmaps batches, as JAX."""
    if batch_size is not None:
        from numbax._src.lax.control_flow.batched_map import batched_map
        return batched_map(f, xs, batch_size)
    return scan(lambda _, x: ((), f(x)), (), xs)[1]


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """for i in range(lower, upper): val = body_fun(i, val). A scan when the bounds are
    concrete (so reverse mode works), a while_loop otherwise — as JAX does; there `i` is a
    weakly typed int (JAX's scan carries the Python int bound) and `unroll` goes to scan.

    Unlike JAX (which runs two equal float bounds), bounds must be integers: a float bound
    raises TypeError instead of being truncated."""
    lower_aval, upper_aval = core.get_aval(lower), core.get_aval(upper)
    if kind_of(lower_aval.dtype) not in "iu" or kind_of(upper_aval.dtype) not in "iu":
        raise NumbaxTypeError(
            f"fori_loop: lower and upper must be integers, got {lower_aval.str_short()} and "
            f"{upper_aval.str_short()}. Pass integer bounds (e.g. int(upper)).")
    lower_c = _concrete_int(lower)
    upper_c = _concrete_int(upper)
    if lower_c is not None and upper_c is not None:
        def step(carry, _):
            i, val = carry
            return (ew.add(i, 1), body_fun(i, val)), ()

        (_, val), _ = scan(step, (lower_c, init_val), None, length=max(upper_c - lower_c, 0),
                           unroll=False if unroll is None else unroll)
        return val
    if unroll not in (None, False, 1):
        raise NumbaxValueError("fori_loop: unroll needs loop bounds known at trace time; "
                               "pass concrete lower and upper, or drop unroll.")
    dtype, _ = dtypes.result_type((lower_aval.dtype, lower_aval.weak_type),
                                  (upper_aval.dtype, upper_aval.weak_type))
    lower = ew.convert_element_type(lower, dtype)
    upper = ew.convert_element_type(upper, dtype)

    def cond(carry):
        return ew.lt(carry[0], carry[1])

    def body(carry):
        i, hi, val = carry
        return ew.add(i, np.array(1, dtype)), hi, body_fun(i, val)

    return while_loop(cond, body, (lower, upper, init_val))[2]


def _concrete_int(x: Any) -> int | None:
    if isinstance(x, core.Tracer):
        value = x.to_concrete_value()
        return None if value is None else int(np.asarray(value))
    return int(np.asarray(x))


# scan's reverse-mode rules live beside it (importing them registers them)
from numbax._src.lax.control_flow import scan_autodiff  # noqa: E402, F401
