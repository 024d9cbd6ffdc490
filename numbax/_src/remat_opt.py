"""custom_vjp(optimize_remat=True): the fwd rule staged as one `remat_opt` equation holding both
the fwd jaxpr and the primal function's, so that under checkpoint the forward pass, which keeps
none of fwd's residuals, runs the primal function instead (`prune`), while the backward pass
reruns fwd for the residuals (JAX's remat_opt_p)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core, typecheck
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Primitive, Var, get_aval
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe

remat_opt_p = Primitive("remat_opt", multiple_results=True)


def _run(args: Sequence[Any], fwd_jaxpr: Jaxpr, prim_jaxpr: Jaxpr, num_fwd_consts: int,
         num_res: int) -> list:
    return core.eval_jaxpr(fwd_jaxpr, [], *args)


core.abstract_eval_rules[remat_opt_p] = lambda *avals, fwd_jaxpr, **params: list(
    fwd_jaxpr.out_avals)
core.impl_rules[remat_opt_p] = lambda *args, **params: [core.to_numpy(x)
                                                        for x in _run(args, **params)]
# differentiating fwd itself (a derivative of a derivative): through its equations
ad.jvp_rules[remat_opt_p] = lambda primals, tangents, **params: ad.jvp_flat(
    lambda *xs: _run(xs, **params), primals, tangents)


def _trace(fun: Callable, avals: Sequence[core.ShapedArray]) -> tuple[Jaxpr, list]:
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(fun, avals)
    return pe.convert_constvars_jaxpr(jaxpr), consts


def _remat_opt_batch(axis, vals, dims, *, fwd_jaxpr, prim_jaxpr, num_fwd_consts, num_res):
    vals = [batching.bdim_at_front(x, d, axis.size) for x, d in zip(vals, dims, strict=True)]

    def vmapped(jaxpr: Jaxpr) -> Callable:
        return lambda *xs: batching.vmap_flat(lambda *ys: core.eval_jaxpr(jaxpr, [], *ys),
                                              axis, [0] * len(xs), [0] * len(jaxpr.outvars),
                                              xs)

    avals = [get_aval(x) for x in vals]
    fwd_b, fwd_consts = _trace(vmapped(fwd_jaxpr), avals)
    prim_b, prim_consts = _trace(vmapped(prim_jaxpr), avals[num_fwd_consts:])
    # operands: [fwd's new consts, fwd's old consts, the primal's new consts, the shared
    # operands]; fwd takes the primal's new consts too (unused), so both see one layout
    k = len(fwd_consts) + num_fwd_consts
    unused = [Var(get_aval(c)) for c in prim_consts]
    fwd_b = Jaxpr([], [*fwd_b.invars[:k], *unused, *fwd_b.invars[k:]], fwd_b.eqns,
                  fwd_b.outvars)
    operands = [*fwd_consts, *vals[:num_fwd_consts], *prim_consts, *vals[num_fwd_consts:]]
    outs = remat_opt_p.bind(*operands, fwd_jaxpr=typecheck.check_jaxpr(fwd_b), prim_jaxpr=prim_b,
                            num_fwd_consts=k, num_res=num_res)
    return outs, [0] * len(outs)


batching.def_body_rule(remat_opt_p, _remat_opt_batch)


def optimizable_fwd(flat_fwd: Callable, call_jaxpr: ClosedJaxpr) -> Callable:
    """custom_vjp's flat fwd rule `(consts, args, perturbed) -> (outs, residuals)` made to bind
    one remat_opt equation holding fwd's jaxpr and the primal `call_jaxpr`."""
    def fwd(consts: Sequence[Any], args: Sequence[Any], perturbed: tuple) -> tuple[list, list]:
        store: dict[str, int] = {}
        n_c = len(consts)

        def flat(*xs):
            outs, res = flat_fwd(xs[:n_c], xs[n_c:], perturbed)
            store["n_out"] = len(outs)
            return [*outs, *res]

        fwd_jaxpr, fwd_consts = _trace(flat, [get_aval(x) for x in (*consts, *args)])
        prim = pe.convert_constvars_jaxpr(call_jaxpr.jaxpr)
        outs = remat_opt_p.bind(*fwd_consts, *consts, *args, fwd_jaxpr=fwd_jaxpr,
                                prim_jaxpr=prim, num_fwd_consts=len(fwd_consts),
                                num_res=len(fwd_jaxpr.outvars) - store["n_out"])
        return outs[:store["n_out"]], outs[store["n_out"]:]

    return fwd


def prune(jaxpr: Jaxpr) -> Jaxpr:
    """Replaces each remat_opt equation none of whose residuals is used by the equations of
    its primal function (the optimization optimize_remat asks for)."""
    used = {x for e in jaxpr.eqns for x in e.invars if isinstance(x, Var)}
    used.update(v for v in jaxpr.outvars if isinstance(v, Var))
    subst: dict[Var, Any] = {}
    read = lambda x: subst.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        eqn = eqn._replace(invars=[read(x) for x in eqn.invars])
        n_out = len(eqn.outvars) - eqn.params.get("num_res", 0)
        if eqn.primitive is not remat_opt_p or any(v in used for v in eqn.outvars[n_out:]):
            eqns.append(eqn)
            continue
        prim = eqn.params["prim_jaxpr"]
        env: dict[Var, Any] = dict(zip(prim.invars, eqn.invars[eqn.params["num_fwd_consts"]:],
                                       strict=True))
        for sub in prim.eqns:
            outvars = [Var(v.aval) for v in sub.outvars]
            env.update(zip(sub.outvars, outvars, strict=True))
            eqns.append(sub._replace(invars=[env.get(x, x) if isinstance(x, Var) else x
                                             for x in sub.invars], outvars=outvars))
        for v, x in zip(eqn.outvars[:n_out], prim.outvars, strict=True):
            subst[v] = env.get(x, x) if isinstance(x, Var) else x
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [read(x) for x in jaxpr.outvars])
