"""Common-subexpression and dead-code elimination over a jaxpr (passes.simplify's last two
passes; the pipeline's and other rewrites' clean-up)."""
from __future__ import annotations

from typing import Any

from numbax._src import core
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import ordering, rng
from numbax._src.lax.control_flow.loops import scan_p

Atom = Var | Literal

# Equations with effects must not be dropped, merged or folded: a stateful generator (each
# call draws new numbers), the sink that keeps values alive, and every primitive marked in
# core.effectful_primitives (callbacks, debug prints). The set is live: modules imported later
# add to it.
core.effectful_primitives.update({rng.rng_uniform_p, ordering.dce_sink_p})
EFFECTFUL: set[core.Primitive] = core.effectful_primitives


def _atom_key(x: Atom) -> Any:
    if isinstance(x, Literal):
        return ("lit", x.aval.dtype.str, x.aval.weak_type, x.val.tobytes())
    return x


def _eqn_key(eqn: JaxprEqn) -> Any:
    try:
        params = tuple(sorted(eqn.params.items()))
        key = (eqn.primitive, params, tuple(_atom_key(x) for x in eqn.invars))
        hash(key)
    except TypeError:
        return None
    return key


def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Merges equations with the same primitive, params and inputs (structural keys)."""
    env: dict[Var, Atom] = {}
    read = lambda x: env.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    seen: dict[Any, list[Var]] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = eqn._replace(invars=[read(x) for x in eqn.invars])
        key = None if eqn.primitive in EFFECTFUL else _eqn_key(eqn)
        if key is not None and key in seen:
            for v, prev in zip(eqn.outvars, seen[key], strict=True):
                env[v] = prev
            continue
        if key is not None:
            seen[key] = eqn.outvars
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [read(x) for x in jaxpr.outvars])


def dce(jaxpr: Jaxpr) -> Jaxpr:
    """Drops equations none of whose outputs is used, and a scan's stacked outputs nobody
    uses (`_scan_without_dead_ys`)."""
    live = {x for x in jaxpr.outvars if isinstance(x, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive in EFFECTFUL or any(v in live for v in eqn.outvars):
            if eqn.primitive is scan_p:
                eqn = _scan_without_dead_ys(eqn, live)
            kept.append(eqn)
            live.update(x for x in eqn.invars if isinstance(x, Var))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept[::-1], jaxpr.outvars)


def _scan_without_dead_ys(eqn: JaxprEqn, live: set) -> JaxprEqn:
    """A scan without the stacked outputs (ys) outside `live`, and without the body's work
    only they needed: each costs a store a step and an array as long as the scan
    (lax.associative_scan's loop stacks every combine's outputs; a linear recurrence reads
    one)."""
    ncarry = eqn.params["num_carry"]
    used = [True] * ncarry + [v in live for v in eqn.outvars[ncarry:]]
    if all(used):
        return eqn
    body = eqn.params["jaxpr"]
    pruned = pe.dce_jaxpr(body.jaxpr, used)
    params = dict(eqn.params, jaxpr=core.ClosedJaxpr(pruned, body.consts))
    outvars = [v for v, keep in zip(eqn.outvars, used, strict=True) if keep]
    return eqn._replace(outvars=outvars, params=params)
