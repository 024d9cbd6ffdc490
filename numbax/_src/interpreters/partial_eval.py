"""Tracing to jaxprs (make_jaxpr, jit) and partial evaluation (the known/unknown split)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from numbax._src import core, source_info, typecheck
from numbax._src.core import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    ShapedArray,
    Trace,
    Tracer,
    Var,
    get_aval,
)

# ----------------------------------------------------------------------------- dynamic tracing


class DynamicJaxprTracer(Tracer):
    __slots__ = ("aval",)

    def __init__(self, trace: Trace, aval: ShapedArray) -> None:
        super().__init__(trace)
        self.aval = aval

    def _short_repr(self) -> str:
        return f"JitTracer({self.aval})"  # JAX 0.10's name for a jit/make_jaxpr tracer


def snapshot(value: np.ndarray) -> np.ndarray:
    """A caller's numpy array as its value now (a read-only copy), unless nothing can write
    to it (a read-only array owning its memory)."""
    if value.flags.writeable or value.base is not None:
        value = value.copy()
        value.flags.writeable = False
    return value


class JaxprBuilder:
    """Collects the equations, constants and variables of a jaxpr under construction."""

    def __init__(self) -> None:
        self.eqns: list[JaxprEqn] = []
        self.tracer_to_var: dict[int, Var] = {}
        self.const_tracers: dict[int, DynamicJaxprTracer] = {}
        self.constvals: dict[Var, Any] = {}
        self.literals: dict[Var, Literal] = {}
        self.tracers: list[DynamicJaxprTracer] = []
        self.const_refs: list[Any] = []

    def new_tracer(self, trace: Trace, aval: ShapedArray) -> DynamicJaxprTracer:
        tracer = DynamicJaxprTracer(trace, aval)
        self.tracers.append(tracer)
        return tracer

    def add_var(self, tracer: DynamicJaxprTracer) -> Var:
        assert id(tracer) not in self.tracer_to_var
        var = self.tracer_to_var[id(tracer)] = Var(tracer.aval)
        return var

    def getvar(self, tracer: DynamicJaxprTracer) -> Var:
        var = self.tracer_to_var.get(id(tracer))
        if var is None:
            raise core.UnexpectedTracerError(
                f"Encountered a tracer {tracer._describe()} that does not belong to the jaxpr "
                "being built: a traced value escaped an earlier trace (stored in a global?)."
            )
        return var

    def add_const(self, tracer: DynamicJaxprTracer, val: Any) -> Var:
        var = self.add_var(tracer)
        self.const_tracers[id(val)] = tracer
        self.const_refs.append(val)  # keeps id(val) unique while the builder lives
        if isinstance(val, np.ndarray):  # captured by value, as JAX does: later writes don't show
            val = snapshot(val)
        if _is_scalar_literal(val, tracer.aval):
            self.literals[var] = Literal(core.to_numpy(val), tracer.aval)
        else:
            self.constvals[var] = val
        return var

    def build(self, in_tracers: Sequence[Tracer], out_tracers: Sequence[Tracer]):
        invars = [self.getvar(t) for t in in_tracers]
        outvars = [self.getvar(t) for t in out_tracers]
        constvars = list(self.constvals)
        consts = [self.constvals[v] for v in constvars]
        jaxpr = Jaxpr(constvars, invars, self.eqns, outvars)
        jaxpr = _inline_literals(jaxpr, self.literals)
        typecheck.check_jaxpr(jaxpr)
        return jaxpr, consts


def _is_scalar_literal(val: Any, aval: ShapedArray) -> bool:
    return aval.shape == () and not isinstance(val, Tracer)


def _inline_literals(jaxpr: Jaxpr, literals: dict[Var, Literal]) -> Jaxpr:
    if not literals:
        return jaxpr
    subst = lambda x: literals.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    eqns = [e._replace(invars=[subst(x) for x in e.invars]) for e in jaxpr.eqns]
    outvars = [subst(x) for x in jaxpr.outvars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, outvars)


class DynamicJaxprTrace(Trace):
    """Records every primitive applied to its tracers (or to constants) as a jaxpr equation."""

    @property
    def builder(self) -> JaxprBuilder:
        return self.main.global_data

    def new_arg(self, aval: ShapedArray) -> DynamicJaxprTracer:
        tracer = self.builder.new_tracer(self, aval)
        self.builder.add_var(tracer)
        return tracer

    def get_or_make_const_tracer(self, val: Any) -> DynamicJaxprTracer:
        tracer = self.builder.const_tracers.get(id(val))
        if tracer is None:
            tracer = self.builder.new_tracer(self, get_aval(val))
            self.builder.add_const(tracer, val)
        return tracer

    pure = lift = get_or_make_const_tracer

    def process_primitive(self, primitive, tracers, params):
        avals_in = [t.aval for t in tracers]
        avals_out = core.abstract_eval(primitive, avals_in, params)
        out_tracers = [self.builder.new_tracer(self, a) for a in avals_out]
        invars = [self.builder.getvar(t) for t in tracers]
        outvars = [self.builder.add_var(t) for t in out_tracers]
        self.builder.eqns.append(JaxprEqn(primitive, invars, outvars, params))
        source_info.record(outvars)  # a no-op unless print_saved_residuals asks for sources
        return out_tracers


def trace_to_jaxpr_dynamic(
    fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray]
) -> tuple[Jaxpr, list[Any]]:
    """Traces a flat function (list of values -> list of values) to a jaxpr and its consts."""
    builder = JaxprBuilder()
    with core.new_main(DynamicJaxprTrace, builder) as main:
        with core.new_dynamic(main):
            trace = DynamicJaxprTrace(main)
            tracers_in = [trace.new_arg(aval) for aval in in_avals]
            outs = fun(*tracers_in)
            tracers_out = [core.full_raise(trace, out) for out in outs]
            jaxpr, consts = builder.build(tracers_in, tracers_out)
    return jaxpr, consts


def trace_to_closed_jaxpr(fun, in_avals) -> ClosedJaxpr:
    jaxpr, consts = trace_to_jaxpr_dynamic(fun, in_avals)
    return ClosedJaxpr(jaxpr, consts)


# ----------------------------------------------------------------------------- partial evaluation


class PartialVal(NamedTuple):
    """A value that is either known (const) or unknown (only its aval)."""

    aval: ShapedArray
    const: Any | None

    @classmethod
    def known(cls, val: Any) -> PartialVal:
        return PartialVal(get_aval(val), val)

    @classmethod
    def unknown(cls, aval: ShapedArray) -> PartialVal:
        return PartialVal(aval, None)

    is_known = property(lambda self: self.const is not None)


class LambdaBindingRecipe(NamedTuple):
    pass


class ConstRecipe(NamedTuple):
    val: Any


class JaxprEqnRecipe(NamedTuple):
    prim: core.Primitive
    tracers_in: list
    params: dict
    avals_out: list
    tracer_refs_out: list


class PartialEvalTracer(Tracer):
    __slots__ = ("pval", "recipe")

    def __init__(self, trace: Trace, pval: PartialVal, recipe: Any) -> None:
        super().__init__(trace)
        self.pval = pval
        self.recipe = recipe

    aval = property(lambda self: self.pval.aval)

    def _short_repr(self) -> str:  # a known value prints as itself (grad's primals, as JAX's)
        return core.short_repr(self.pval.const) if self.pval.is_known else \
            f"JaxprTracer<{self.aval}>"

    def full_lower(self):
        if self.pval.is_known:
            return core.full_lower(self.pval.const)
        return self

    def to_concrete_value(self):
        if not self.pval.is_known:
            return None
        const = self.pval.const
        return const.to_concrete_value() if isinstance(const, Tracer) else core.to_numpy(const)


# Rules for primitives that split themselves (jit-like or control flow): (trace, tracers, params).
partial_eval_rules: dict[core.Primitive, Callable] = {}


class PartialEvalTrace(Trace):
    """Runs what is known now and records the rest (the linear part, in linearize)."""

    def new_arg(self, pval: PartialVal) -> PartialEvalTracer:
        if pval.is_known:
            return PartialEvalTracer(self, pval, None)
        return PartialEvalTracer(self, pval, LambdaBindingRecipe())

    def lift(self, val: Any) -> PartialEvalTracer:
        return PartialEvalTracer(self, PartialVal.known(val), None)

    pure = lift

    def instantiate_const(self, tracer: PartialEvalTracer) -> PartialEvalTracer:
        if tracer.pval.is_known:
            return PartialEvalTracer(self, PartialVal.unknown(tracer.aval),
                                     ConstRecipe(tracer.pval.const))
        return tracer

    def process_primitive(self, primitive, tracers, params):
        if all(t.pval.is_known for t in tracers):
            return core.bind(primitive, *[t.pval.const for t in tracers], **params)
        rule = partial_eval_rules.get(primitive)
        if rule is not None:
            return rule(self, tracers, **params)
        return default_process_primitive(self, primitive, tracers, params)


def partial_eval_flat(
    f: Callable, pvals_in: Sequence[PartialVal], instantiate: Sequence[bool] | bool = False
) -> tuple[Jaxpr, list[PartialVal], list[Any]]:
    """Runs f on partially known inputs: known outputs as values, the rest as a jaxpr of the
    unknown inputs (with constvars for the known values it needs). Outputs marked in
    `instantiate` are made unknown (part of the jaxpr) even when known."""
    with core.new_main(PartialEvalTrace) as main:
        trace = PartialEvalTrace(main)
        tracers_in = [trace.new_arg(pval) for pval in pvals_in]
        outs = f(*tracers_in)
        tracers_out = [core.full_raise(trace, out) for out in outs]
        if isinstance(instantiate, bool):
            instantiate = [instantiate] * len(tracers_out)
        tracers_out = [trace.instantiate_const(t) if inst else t
                       for t, inst in zip(tracers_out, instantiate, strict=True)]
        pvals_out = [t.pval for t in tracers_out]
        unk_tracers_in = [t for t in tracers_in if t.pval.const is None]
        unk_tracers_out = [t for t in tracers_out if t.pval.const is None]
        jaxpr, consts = tracers_to_jaxpr(unk_tracers_in, unk_tracers_out)
    return jaxpr, pvals_out, consts


def partial_eval_jaxpr(closed: ClosedJaxpr, in_unknowns: Sequence[bool],
                       instantiate: Sequence[bool] | bool = False):
    """Splits a jaxpr into a known part and an unknown part.

    Returns (jaxpr_known, jaxpr_unknown, out_unknowns, num_res): jaxpr_known maps the known
    inputs to [known outputs..., residuals...]; jaxpr_unknown maps [residuals..., unknown
    inputs...] to the unknown outputs. Both are ClosedJaxprs without consts."""
    in_avals = closed.in_avals
    known_avals = [a for a, uk in zip(in_avals, in_unknowns, strict=True) if not uk]
    store: dict[str, Any] = {}

    def fun_known(*known_args):
        it = iter(known_args)
        pvals = [PartialVal.unknown(a) if uk else PartialVal.known(next(it))
                 for a, uk in zip(in_avals, in_unknowns, strict=True)]
        jaxpr_unk, pvals_out, residuals = partial_eval_flat(
            lambda *xs: source_info.eval_jaxpr(closed.jaxpr, closed.consts, *xs), pvals,
            instantiate)
        store["jaxpr_unk"] = jaxpr_unk
        store["out_unknowns"] = [not p.is_known for p in pvals_out]
        store["num_res"] = len(residuals)
        return [*[p.const for p in pvals_out if p.is_known], *residuals]

    jaxpr_known, consts = trace_to_jaxpr_dynamic(fun_known, known_avals)
    known = hoist_consts(ClosedJaxpr(jaxpr_known, consts))
    unknown = ClosedJaxpr(convert_constvars_jaxpr(store["jaxpr_unk"]), [])
    return known, unknown, store["out_unknowns"], store["num_res"]


def hoist_consts(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Keeps consts only when they are concrete values; tracers cannot live in a param."""
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise core.UnexpectedTracerError(
            "a sub-jaxpr closed over a traced value; pass it as an operand instead")
    return closed


def default_process_primitive(trace: PartialEvalTrace, primitive, tracers, params):
    """Records the whole equation as unknown (what PartialEvalTrace does without a rule)."""
    tracers_in = [trace.instantiate_const(t) for t in tracers]
    avals_out = core.abstract_eval(primitive, [t.aval for t in tracers_in], params)
    tracers_out = [PartialEvalTracer(trace, PartialVal.unknown(a), None) for a in avals_out]
    eqn = JaxprEqnRecipe(primitive, tracers_in, params, avals_out, tracers_out)
    for t in tracers_out:
        t.recipe = eqn
    return tracers_out


def tracers_to_jaxpr(tracers_in: list, tracers_out: list) -> tuple[Jaxpr, list[Any]]:
    tracer_to_var = {id(t): Var(t.aval) for t in tracers_in}
    constvar_to_val: dict[Var, Any] = {}
    processed_eqns: set[int] = set()
    eqns: list[JaxprEqn] = []
    for t in toposort(tracers_out, tracer_parents):
        if isinstance(t.recipe, LambdaBindingRecipe):
            assert id(t) in tracer_to_var
        elif isinstance(t.recipe, ConstRecipe):
            val = t.recipe.val
            var = tracer_to_var[id(t)] = Var(t.aval)
            constvar_to_val[var] = val
        elif isinstance(t.recipe, JaxprEqnRecipe):
            if id(t.recipe) not in processed_eqns:
                eqns.append(_recipe_to_eqn(tracer_to_var, t.recipe))
                processed_eqns.add(id(t.recipe))
        else:
            raise core.UnexpectedTracerError(
                "a partially evaluated value escaped: it was computed from a known value "
                "outside the differentiated function"
            )
    constvars, constvals = list(constvar_to_val), list(constvar_to_val.values())
    in_binders = [tracer_to_var[id(t)] for t in tracers_in]
    out_vars = [tracer_to_var[id(t)] for t in tracers_out]
    jaxpr = Jaxpr(constvars, in_binders, eqns, out_vars)
    typecheck.check_jaxpr(jaxpr)
    return jaxpr, constvals


def _recipe_to_eqn(tracer_to_var: dict[int, Var], recipe: JaxprEqnRecipe) -> JaxprEqn:
    inputs = [tracer_to_var[id(t)] for t in recipe.tracers_in]
    out_binders = [Var(aval) for aval in recipe.avals_out]
    for t, var in zip(recipe.tracer_refs_out, out_binders, strict=True):
        if t is not None:
            tracer_to_var[id(t)] = var
    return JaxprEqn(recipe.prim, inputs, out_binders, recipe.params)


def tracer_parents(t: PartialEvalTracer) -> list:
    return t.recipe.tracers_in if isinstance(t.recipe, JaxprEqnRecipe) else []


def toposort(out_nodes: list, parents: Callable) -> list:
    """Nodes reachable from out_nodes, each after all of its parents (iterative, no recursion)."""
    if not out_nodes:
        return []
    out_nodes = _remove_duplicates(out_nodes)
    child_counts: dict[int, int] = {}
    stack = list(out_nodes)
    while stack:
        node = stack.pop()
        if id(node) in child_counts:
            child_counts[id(node)] += 1
        else:
            child_counts[id(node)] = 1
            stack.extend(parents(node))
    for node in out_nodes:
        child_counts[id(node)] -= 1
    sorted_nodes = []
    childless = [n for n in out_nodes if not child_counts[id(n)]]
    while childless:
        node = childless.pop()
        sorted_nodes.append(node)
        for parent in parents(node):
            if child_counts[id(parent)] == 1:
                childless.append(parent)
            else:
                child_counts[id(parent)] -= 1
    return sorted_nodes[::-1]


def _remove_duplicates(lst: list) -> list:
    seen: set[int] = set()
    out = []
    for x in lst:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


# ----------------------------------------------------------------------------- jaxpr utilities


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None) -> Jaxpr:
    """Drops equations whose outputs nobody uses, except effectful ones (callbacks)."""
    outvars = jaxpr.outvars if used_outputs is None else [
        v for v, used in zip(jaxpr.outvars, used_outputs, strict=True) if used
    ]
    live = {v for v in outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive in core.effectful_primitives or any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(x for x in eqn.invars if isinstance(x, Var))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept[::-1], outvars)


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Turns constvars into leading invars."""
    return Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.eqns, jaxpr.outvars)
