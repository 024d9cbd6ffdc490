"""linear_call: a function linear in some arguments together with a user-given transpose, as one
`linear_call` equation whose transpose is a linear_call of the transpose (and back)."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, get_aval
from numbax._src.custom_derivatives import _Rule
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe

linear_call_p = Primitive("linear_call", multiple_results=True)


def _trace(fun: Callable, avals: Sequence[core.ShapedArray]) -> tuple[ClosedJaxpr, list, Any]:
    """(closed jaxpr taking [consts..., args...], consts, output tree) of flat `fun`."""
    store: dict[str, Any] = {}

    def flat(*xs):
        out_flat, store["tree"] = tu.tree_flatten(fun(*xs))
        return out_flat

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat, list(avals))
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts, store["tree"]


def _linear_call_impl(*args, callee, transpose_thunk, num_callee_consts, num_res):
    return [core.to_numpy(x) for x in core.eval_jaxpr(callee.jaxpr, [], *args)]


def _linear_call_jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts,
                     num_res):
    """Linear in its linear inputs: the tangent is the same call on the input tangents."""
    params = dict(callee=callee, transpose_thunk=transpose_thunk,
                  num_callee_consts=num_callee_consts, num_res=num_res)
    k = num_callee_consts + num_res
    if any(type(t) is not ad.Zero for t in tangents[:k]):
        raise NumbaxTypeError("linear_call: the residual arguments are being differentiated; "
                              "linear_call is linear in its linear arguments only.")
    primals_out = linear_call_p.bind(*primals, **params)
    tangents_out = linear_call_p.bind(*primals[:k],
                                      *[ad.instantiate_zeros(t) for t in tangents[k:]],
                                      **params)
    return primals_out, tangents_out


def _linear_call_transpose(cts, *args, callee, transpose_thunk, num_callee_consts, num_res):
    """The transpose is a linear_call of the user's transpose, whose own transpose is this
    call again."""
    transpose, t_consts = transpose_thunk()
    f_consts = args[:num_callee_consts]
    res = args[num_callee_consts:num_callee_consts + num_res]
    ct_avals = transpose.in_avals[len(t_consts) + num_res:]
    cts = [ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct
           for ct, a in zip(cts, ct_avals, strict=True)]
    back = _Rule(lambda: (callee, list(f_consts)), "transpose")
    cts_out = linear_call_p.bind(*t_consts, *res, *cts, callee=transpose,
                                 transpose_thunk=back, num_callee_consts=len(t_consts),
                                 num_res=num_res)
    return [None] * (num_callee_consts + num_res) + list(cts_out)


def _vmapped(closed: ClosedJaxpr, axis_size: int) -> Callable:
    def run(*xs):
        return batching.vmap_flat(lambda *ys: core.eval_jaxpr(closed.jaxpr, [], *ys),
                                  batching.AxisData(axis_size, None), [0] * len(xs),
                                  [0] * len(closed.jaxpr.outvars), xs)
    return run


def _linear_call_batch(axis_size, vals, dims, *, callee, transpose_thunk, num_callee_consts,
                       num_res):
    """Both the callee and its transpose vmapped, every operand batched along axis 0."""
    vals = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]
    batched, consts, _ = _trace(_vmapped(callee, axis_size), [get_aval(x) for x in vals])

    def batched_transpose():
        transpose, t_consts = transpose_thunk()
        t_vals_avals = [get_aval(c).update(shape=(axis_size, *get_aval(c).shape))
                        for c in t_consts]
        res_avals = [get_aval(x) for x in vals[num_callee_consts:num_callee_consts + num_res]]
        ct_avals = [a.update(shape=(axis_size, *a.shape)) for a in callee.out_avals]
        tb, tb_consts, _ = _trace(_vmapped(transpose, axis_size),
                                  [*t_vals_avals, *res_avals, *ct_avals])
        t_bcast = [batching.broadcast_batched(c, axis_size, 0) for c in t_consts]
        # the new transpose's leading operands: its own consts, then the broadcast old ones
        return tb, [*tb_consts, *t_bcast]

    outs = linear_call_p.bind(*consts, *vals, callee=batched,
                              transpose_thunk=_Rule(functools.cache(batched_transpose),
                                                    "batched_transpose"),
                              num_callee_consts=len(consts) + num_callee_consts,
                              num_res=num_res)
    return outs, [0] * len(outs)


core.abstract_eval_rules[linear_call_p] = lambda *avals, callee, **params: list(
    callee.out_avals)
core.impl_rules[linear_call_p] = _linear_call_impl
ad.jvp_rules[linear_call_p] = _linear_call_jvp
ad.transpose_rules[linear_call_p] = _linear_call_transpose
batching.batch_rules[linear_call_p] = _linear_call_batch


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any,
                linear_args: Any) -> Any:
    """Calls `fun(residual_args, linear_args)`, a function linear in `linear_args`, with
    `fun_transpose(residual_args, out_cotangent)` as its transpose (used by grad, vjp and
    linear_transpose instead of transposing `fun`'s equations).

    >>> import numbax
    >>> f = lambda r, x: x / r
    >>> t = lambda r, ct: ct / r
    >>> div_add = lambda x, denom: x + linear_call(f, t, denom, x)
    >>> float(div_add(9.0, 3.0)), float(numbax.grad(div_add)(9.0, 3.0))
    (12.0, 1.3333333333333333)
    """
    for name, f in (("fun", fun), ("fun_transpose", fun_transpose)):
        if not callable(f):
            raise NumbaxTypeError(f"linear_call: {name} is a {type(f).__name__}, expected a "
                                  "callable.")
    res_flat, res_tree = tu.tree_flatten(residual_args)
    lin_flat, lin_tree = tu.tree_flatten(linear_args)
    n_res = len(res_flat)
    res_avals = [get_aval(x) for x in res_flat]
    callee, f_consts, out_tree = _trace(
        lambda *xs: fun(tu.tree_unflatten(res_tree, xs[:n_res]),
                        tu.tree_unflatten(lin_tree, xs[n_res:])),
        [*res_avals, *[get_aval(x) for x in lin_flat]])
    out_avals = callee.out_avals

    @functools.cache  # traced once, when first transposed
    def transpose_thunk():
        t, t_consts, t_tree = _trace(
            lambda *xs: fun_transpose(tu.tree_unflatten(res_tree, xs[:n_res]),
                                      tu.tree_unflatten(out_tree, xs[n_res:])),
            [*res_avals, *out_avals])
        if t_tree != lin_tree:
            raise NumbaxTypeError(
                "transpose output pytree structure must match that of linear inputs, got "
                f"output structure {t_tree} and input structure {lin_tree}.")
        return t, t_consts

    outs = linear_call_p.bind(*f_consts, *res_flat, *lin_flat, callee=callee,
                              transpose_thunk=_Rule(transpose_thunk, "transpose"),
                              num_callee_consts=len(f_consts), num_res=n_res)
    return tu.tree_unflatten(out_tree, outs)
