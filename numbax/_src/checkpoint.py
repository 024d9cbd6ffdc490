"""checkpoint / remat: a primitive holding a jaxpr whose linearization saves only its inputs and
the values its policy allows (checkpoint_policies.py), and recomputes the rest inside the
transposed (backward) pass."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import checkpoint_policies as policies
from numbax._src import core, dtypes, remat_opt, source_info, typecheck
from numbax._src import tree_util as tu
from numbax._src.checkpoint_policies import checkpoint_policies  # noqa: F401  (jax's path)
from numbax._src.core import Jaxpr, Primitive, Var, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import ordering

checkpoint_p = Primitive("checkpoint", multiple_results=True)


def _checkpoint_abstract_eval(*avals, jaxpr, prevent_cse, differentiated, policy):
    return list(jaxpr.out_avals)


def _checkpoint_impl(*args, jaxpr, prevent_cse, differentiated, policy):
    # numpy results, so the eager trace gives them the weak types of the abstract eval
    return [core.to_numpy(x) for x in source_info.eval_jaxpr(jaxpr, [], *args)]


def _trace(fun: Callable, avals: Sequence[core.ShapedArray]) -> tuple[Jaxpr, list]:
    """A jaxpr of flat fun with its constants turned into leading inputs."""
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(fun, avals)
    return pe.convert_constvars_jaxpr(jaxpr), consts


def _checkpoint_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    n = len(primals)
    nonzero = [type(t) is not ad.Zero for t in tangents]
    nz_tangents = [t for t, nz in zip(tangents, nonzero, strict=True) if nz]
    out_float = [dtypes.is_inexact(v.aval.dtype) for v in jaxpr.outvars]

    def jvp_fun(*xs):
        it = iter(xs[n:])
        ts = [next(it) if nz else ad.Zero.from_primal_value(p)
              for p, nz in zip(xs[:n], nonzero, strict=True)]
        primals_out, tangents_out = ad.jvp_flat(
            lambda *args: source_info.eval_jaxpr(jaxpr, [], *args), xs[:n], ts)
        float_tangents = [ad.instantiate_zeros(t)
                          for t, f in zip(tangents_out, out_float, strict=True) if f]
        return [*primals_out, *float_tangents]

    avals = [get_aval(x) for x in (*primals, *nz_tangents)]
    jvp_jaxpr, consts = _trace(jvp_fun, avals)
    outs = checkpoint_p.bind(*consts, *primals, *nz_tangents, jaxpr=jvp_jaxpr,
                             prevent_cse=prevent_cse, differentiated=True, policy=policy)
    n_out = len(jaxpr.outvars)
    it = iter(outs[n_out:])
    tangents_out = [next(it) if f else ad.Zero(ad.tangent_aval(v.aval))
                    for v, f in zip(jaxpr.outvars, out_float, strict=True)]
    return outs[:n_out], tangents_out


def split_by_policy(jaxpr: Jaxpr, known_in: Sequence[bool], policy: Callable | None):
    """Splits a checkpointed (jvp) jaxpr for linearize, as JAX's partial_eval_jaxpr_custom.

    Returns (known jaxpr: known inputs -> [known outputs..., residuals...], its consts, their
    count, staged jaxpr: [residuals..., unknown inputs...] -> unknown outputs, which outputs
    are unknown, which residuals the policy offloads). Partial
    evaluation first splits the jaxpr (control flow and nested checkpoints by their own rules);
    of the values the unknown side needs, those the policy saves (and the known inputs) stay
    residuals and the rest are recomputed on the staged side from them. Effectful equations
    (debug prints) the policy does not save run on both sides, as in JAX."""
    known, unknown, out_unknown, num_res = pe.partial_eval_jaxpr(
        core.ClosedJaxpr(jaxpr, []), [not k for k in known_in])
    kj = pe.convert_constvars_jaxpr(known.jaxpr)  # its consts become leading known inputs
    n_consts = len(known.jaxpr.constvars)
    res_out = kj.outvars[len(kj.outvars) - num_res:]
    saved = set(kj.invars)
    for eqn in kj.eqns:
        if policies.saves(policy, eqn):
            saved.update(eqn.outvars)
    live = {r for r in res_out if isinstance(r, Var) and r not in saved}
    recompute = []
    for eqn in reversed(kj.eqns):
        rerun = eqn.primitive in core.effectful_primitives and not policies.saves(policy, eqn)
        if rerun or any(v in live for v in eqn.outvars):
            recompute.append(eqn)
            live.update(x for x in eqn.invars if isinstance(x, Var) and x not in saved)
    recompute.reverse()
    produced = {v for e in recompute for v in e.outvars}
    used = [x for e in recompute for x in e.invars] + list(res_out)
    residuals = list(dict.fromkeys(x for x in used if isinstance(x, Var) and x in saved
                                   and x not in produced))
    subst = dict(zip(unknown.jaxpr.invars[:num_res], res_out, strict=True))
    read = lambda x: subst.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    staged_eqns = recompute + [e._replace(invars=[read(x) for x in e.invars])
                               for e in unknown.jaxpr.eqns]
    staged = Jaxpr([], [*residuals, *unknown.jaxpr.invars[num_res:]], staged_eqns,
                   [read(x) for x in unknown.jaxpr.outvars])
    known_outs = kj.outvars[:len(kj.outvars) - num_res]
    known_jaxpr = pe.dce_jaxpr(Jaxpr([], kj.invars, kj.eqns, [*known_outs, *residuals]))
    known_jaxpr = remat_opt.prune(known_jaxpr)  # custom_vjp(optimize_remat=True)
    offloaded = {v for e in kj.eqns if policies.offloads(policy, e) for v in e.outvars}
    return (known_jaxpr, list(known.consts), n_consts, typecheck.check_jaxpr(staged),
            out_unknown, [r in offloaded for r in residuals])


def _checkpoint_partial_eval(trace, tracers, *, jaxpr, policy, **params):
    """Known outputs and the residuals the policy saves are computed now; unknown outputs
    become one checkpoint equation of the residuals and unknown inputs, which recomputes the
    rest in the backward pass."""
    known_in = [t.pval.is_known for t in tracers]
    known_jaxpr, consts, _, staged, out_unknown, offloaded = split_by_policy(
        jaxpr, known_in, policy)
    known_vals = [t.pval.const for t in tracers if t.pval.is_known]
    outs = source_info.eval_jaxpr(known_jaxpr, [], *consts, *known_vals)
    n_known_out = len(out_unknown) - sum(out_unknown)
    known_outs, residuals = outs[:n_known_out], outs[n_known_out:]
    source_info.note_offloaded([r for r, o in zip(residuals, offloaded, strict=True) if o])
    tracers_in = [trace.instantiate_const(trace.pure(r)) for r in residuals]
    tracers_in += [t for t in tracers if not t.pval.is_known]
    avals_out = [v.aval for v in staged.outvars]
    unk_tracers = [pe.PartialEvalTracer(trace, pe.PartialVal.unknown(a), None)
                   for a in avals_out]
    recipe = pe.JaxprEqnRecipe(checkpoint_p, tracers_in,
                               dict(jaxpr=staged, policy=policy, **params), avals_out,
                               unk_tracers)
    for t in unk_tracers:
        t.recipe = recipe
    known_it, unk_it = iter(known_outs), iter(unk_tracers)
    return [next(unk_it) if u else trace.pure(next(known_it)) for u in out_unknown]


def _checkpoint_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    if prevent_cse:
        # the recomputation reads its inputs through a barrier, so jit's CSE cannot merge it
        # with the forward pass's copy of the same equations (JAX's prevent_cse)
        defined = [x for x in args if not ad.is_undefined_primal(x)]
        fenced = iter(ordering.optimization_barrier(defined) if defined else [])
        args = [x if ad.is_undefined_primal(x) else next(fenced) for x in args]
    cts_in = ad.backward_pass(jaxpr, [], args, cts)
    return [ct if ad.is_undefined_primal(x) else None
            for x, ct in zip(args, cts_in, strict=True)]


def _checkpoint_batch(axis_data, vals, dims, *, jaxpr, prevent_cse, differentiated, policy):
    vals = [batching.bdim_at_front(x, d, axis_data.size) for x, d in zip(vals, dims,
                                                                         strict=True)]
    avals = [get_aval(x) for x in vals]

    def batched(*xs):
        return batching.vmap_flat(lambda *ys: source_info.eval_jaxpr(jaxpr, [], *ys),
                                  axis_data, [0] * len(xs),
                                  [0] * len(jaxpr.outvars), xs)

    batched_jaxpr, consts = _trace(batched, avals)
    outs = checkpoint_p.bind(*consts, *vals, jaxpr=batched_jaxpr, prevent_cse=prevent_cse,
                             differentiated=differentiated, policy=policy)
    return outs, [0] * len(outs)


core.abstract_eval_rules[checkpoint_p] = _checkpoint_abstract_eval
core.impl_rules[checkpoint_p] = _checkpoint_impl
ad.jvp_rules[checkpoint_p] = _checkpoint_jvp
ad.transpose_rules[checkpoint_p] = _checkpoint_transpose
pe.partial_eval_rules[checkpoint_p] = _checkpoint_partial_eval
batching.def_body_rule(checkpoint_p, _checkpoint_batch)


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True,
               policy: Callable | None = None, static_argnums: int | Sequence[int] = ()):
    """Makes `fun` recompute its intermediates in the backward pass instead of storing them.

    Args:
      fun: the function to rematerialise (or None, to use as `@checkpoint(policy=...)`).
      prevent_cse: under jit, keep the backward pass's recomputation from being merged with
        the forward computation (numbax reads its inputs through an optimization barrier).
      policy: which intermediates may be saved instead of recomputed: a function of
        (primitive, *input avals, **params) answering a bool or Saveable / Recompute /
        Offloadable, such as those of numbax.checkpoint_policies. None saves only the
        inputs.
      static_argnums: positions of arguments treated as Python constants.

    Returns:
      A function with the same values and derivatives as `fun`.

    >>> import numbax, numbax.numpy as jnp
    >>> f = numbax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    >>> round(float(numbax.grad(f)(1.0)), 6)
    0.360039
    """
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums)
    if not callable(fun):
        raise NumbaxTypeError(f"checkpoint: expected a callable as the first argument, got "
                              f"{type(fun).__name__}.")
    if policy is not None and not callable(policy):
        raise NumbaxTypeError(f"checkpoint: policy is a {type(policy).__name__}, expected a "
                              "callable from numbax.checkpoint_policies or None.")
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def fun_remat(*args, **kwargs):
        for i in statics:
            if not -len(args) <= i < len(args):
                raise NumbaxValueError(
                    f"checkpoint: static_argnums {statics} refers to argument {i}, but the "
                    f"function was called with {len(args)} positional arguments.")
        static_pos = {i % len(args) for i in statics}
        dyn = [a for i, a in enumerate(args) if i not in static_pos]
        flat, in_tree = tu.tree_flatten((dyn, kwargs))
        store: dict[str, Any] = {}

        def flat_fun(*xs):
            dyn_args, kw = tu.tree_unflatten(in_tree, xs)
            it = iter(dyn_args)
            full = [args[i] if i in static_pos else next(it) for i in range(len(args))]
            out_flat, store["tree"] = tu.tree_flatten(fun(*full, **kw))
            return out_flat

        for i, x in enumerate(flat):
            if not core.is_array_like(x):
                raise NumbaxTypeError(
                    f"checkpoint: argument leaf {i} is a {type(x).__name__}, which is not a "
                    "valid array type. Mark it with static_argnums.")
        jaxpr, consts = _trace(flat_fun, [get_aval(x) for x in flat])
        outs = checkpoint_p.bind(*consts, *flat, jaxpr=jaxpr, prevent_cse=bool(prevent_cse),
                                 differentiated=False, policy=policy)
        return tu.tree_unflatten(store["tree"], outs)

    return fun_remat


remat = checkpoint
