"""Where a custom_jvp / custom_vjp call runs without tracing its primal function, as JAX's
traces do (EvalTrace, JaxprTrace on known values and JVPTrace process_custom_*_call): eagerly,
on the known values of linearize's primal side, or as the user's rule under a JVP trace. So
Python control flow on values works inside the function and its rules under grad."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src.interpreters import ad
from numbax._src.interpreters import partial_eval as pe


def lower_known(args_flat: list) -> list:
    """Known partial-eval tracers (linearize's primal side) replaced by their values, as JAX's
    partial evaluation runs a custom-derivative call whose inputs are all known."""
    while True:
        top = core.find_top_trace(args_flat)
        if not isinstance(top, pe.PartialEvalTrace):
            return args_flat
        tracers = [core.full_raise(top, x) for x in args_flat]
        if not all(t.pval.is_known for t in tracers):
            return args_flat
        args_flat = [t.pval.const for t in tracers]


def is_eager(args_flat: Sequence[Any]) -> bool:
    """No transform sees these arguments: JAX then calls the function itself, untraced."""
    return isinstance(core.find_top_trace(args_flat), core.EvalTrace)


def jvp_trace(args_flat: Sequence[Any]) -> ad.JVPTrace | None:
    """The JVP trace (grad, jvp, linearize) whose tracers are the arguments, when it is the top
    trace: the rule then runs on the primal values directly, as JAX's JVPTrace does, so the
    primal function is never traced (Python control flow on values works)."""
    top = core.find_top_trace(args_flat)
    return top if isinstance(top, ad.JVPTrace) else None


def run_on_primals(trace: ad.JVPTrace, args_flat: Sequence[Any], rule: Callable) -> list | None:
    """JVP tracers of `rule(primals, tangents) -> (primals_out, tangents_out)` (tangents that
    are ad.Zero stay so: the rule instantiates them or passes them on as symbolic), or None where
    the rule's outputs hold tracers of this same trace (the function closes over a value being
    differentiated: the caller then takes the traced path, which handles closures)."""
    tracers = [core.full_raise(trace, x) for x in args_flat]
    primals = [t.primal for t in tracers]
    tangents = [t.tangent for t in tracers]  # ad.Zero where not perturbed: the rule decides
    primals_out, tangents_out = rule(primals, tangents)
    if any(isinstance(x, core.Tracer) and x._trace.main is trace.main
           for x in [*primals_out, *tangents_out]):
        return None
    return [ad.JVPTracer(trace, p, t) for p, t in zip(primals_out, tangents_out, strict=True)]
