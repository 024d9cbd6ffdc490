"""Inlines call-like equations (custom_jvp_call, custom_vjp_call, checkpoint) and expands the
primitives registered with an `expand` rule (reduce, custom_linear_solve, device_put) before
jit's passes.

Under jit the derivative rules of these primitives have done their work (autodiff ran while
tracing), so each is just a call of its jaxpr: splicing that jaxpr into the caller lets fusion
see through it. The pass also recurses into the sub-jaxprs of control-flow equations.
"""
from __future__ import annotations

from collections import ChainMap
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.compiler import registry
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var


def inline_calls(jaxpr: Jaxpr, expand: bool = True) -> Jaxpr:
    """The jaxpr with every call-like equation replaced by the equations of its jaxpr (and,
    where `expand`, every expanded primitive by its expansion; eager programs keep them, since
    their impls are what an eager call runs: eager_programs.py)."""
    env: dict[Var, Any] = {}
    eqns: list[JaxprEqn] = []
    splice(jaxpr.eqns, env, eqns, expand)
    read = lambda x: env.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [read(x) for x in jaxpr.outvars])


def _callee(eqn: JaxprEqn, expand: bool) -> tuple[Jaxpr, list] | None:
    """(jaxpr, consts) of a call-like equation whose jaxpr matches its inputs and outputs
    (registry.inline_param names the param holding it), or of an expanded one's expansion."""
    param = registry.inline_param(eqn.primitive)
    sub = eqn.params.get(param) if param else registry.expansion(eqn) if expand else None
    if isinstance(sub, ClosedJaxpr):
        sub, consts = sub.jaxpr, sub.consts
    elif isinstance(sub, Jaxpr):
        consts = []
    else:
        return None
    if len(sub.invars) != len(eqn.invars) or len(sub.outvars) != len(eqn.outvars):
        return None
    if any(np.shape(c) != () for c in consts):
        return None
    return sub, consts


def splice(sub_eqns: list[JaxprEqn], env: dict, out: list[JaxprEqn],
           expand: bool = True) -> None:
    """Appends `sub_eqns` to `out` with inputs read through `env` and fresh output vars."""
    read = lambda x: env.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    for eqn in sub_eqns:
        invars = [read(x) for x in eqn.invars]
        callee = _callee(eqn, expand)
        if callee is not None:
            sub, consts = callee
            inner: ChainMap = ChainMap({}, env)  # a view, not a copy: calls are many
            for v, c in zip(sub.constvars, consts, strict=True):
                inner[v] = Literal(core.to_numpy(c), v.aval)
            for v, x in zip(sub.invars, invars, strict=True):
                inner[v] = x
            splice(sub.eqns, inner, out, expand)
            for v, x in zip(eqn.outvars, sub.outvars, strict=True):
                env[v] = inner.get(x, x) if isinstance(x, Var) else x
            continue
        outvars = []
        for v in eqn.outvars:
            fresh = Var(v.aval)
            env[v] = fresh
            outvars.append(fresh)
        params = {k: _inline_param(p, expand) for k, p in eqn.params.items()}
        out.append(JaxprEqn(eqn.primitive, invars, outvars, params))


def _inline_param(value: Any, expand: bool) -> Any:
    """Sub-jaxprs of control flow, inlined recursively (other params unchanged)."""
    if isinstance(value, ClosedJaxpr):
        return ClosedJaxpr(inline_calls(value.jaxpr, expand), value.consts)
    if isinstance(value, Jaxpr):
        return inline_calls(value, expand)
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        return tuple(_inline_param(v, expand) for v in value)
    return value
