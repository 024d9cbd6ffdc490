"""Forward mode (JVPTrace), symbolic zeros, linearize by partial evaluation, and transposition."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Literal, Primitive, ShapedArray, Trace, Tracer, Var, get_aval
from numbax._src.interpreters import partial_eval as pe

jvp_rules: dict[Primitive, Callable] = {}
transpose_rules: dict[Primitive, Callable] = {}
# Primitives whose outputs carry no derivative (comparisons, iota, integer ops): zero tangents.
non_differentiable: set[Primitive] = set()

# ----------------------------------------------------------------------------- symbolic zeros


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The aval of tangents for primal `aval`: float0 for integer and boolean values."""
    if dtypes.is_inexact(aval.dtype):
        return aval
    return ShapedArray(aval.shape, dtypes.float0)


class Zero:
    """A tangent or cotangent known to be zero: costs nothing until instantiated."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    @staticmethod
    def from_primal_value(val: Any) -> Zero:
        return Zero(tangent_aval(get_aval(val)))

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


def zeros_like_aval(aval: ShapedArray) -> Any:
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    from numbax._src.lax import shape_ops  # the lax layer sits above the interpreters

    return shape_ops.full(aval.shape, 0, aval.dtype, weak_type=aval.weak_type)


def instantiate_zeros(t: Any) -> Any:
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(x: Any, y: Any) -> Any:
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return add_any_p.bind(x, y)


add_any_p = Primitive("add_any")
# operands share a shape, except under vmap, where an unbatched rank-0 one meets a batched one
core.abstract_eval_rules[add_any_p] = lambda x, y: [x if x.ndim >= y.ndim else y]
core.impl_rules[add_any_p] = lambda x, y: [np.add(x, y)]


# ----------------------------------------------------------------------------- forward mode


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: Trace, primal: Any, tangent: Any) -> None:
        super().__init__(trace)
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return get_aval(self.primal)

    def _short_repr(self) -> str:
        """JAX's forms: JVPTracer(primal=.., tangent=..) under jvp, and under grad, vjp and
        linearize GradTracer(primal=.., typeof(tangent)=f32[])."""
        primal = core.short_repr(self.primal)
        if self._trace.main.global_data == "linearize":
            tangent_type = get_aval(self.tangent).str_short()
            return f"GradTracer(primal={primal}, typeof(tangent)={tangent_type})"
        t = self.tangent
        tangent = f"Zero({t.aval})" if type(t) is Zero else core.short_repr(t)
        return f"JVPTracer(primal={primal}, tangent={tangent})"

    def to_concrete_value(self) -> Any:
        if isinstance(self.primal, Tracer):
            return self.primal.to_concrete_value()
        return core.concrete_or_error(self.primal, "")


class JVPTrace(Trace):
    def pure(self, val: Any) -> JVPTracer:
        return JVPTracer(self, val, Zero.from_primal_value(val))

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        primals_in = [t.primal for t in tracers]
        tangents_in = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents_in):
            return core.bind(primitive, *primals_in, **params)
        rule = jvp_rules.get(primitive)
        if rule is None:
            if primitive in non_differentiable:
                outs = core.bind(primitive, *primals_in, **params)
                return [JVPTracer(self, x, Zero.from_primal_value(x)) for x in outs]
            raise NotImplementedError(
                f"Differentiation rule for '{primitive.name}' is not implemented."
            )
        primals_out, tangents_out = rule(primals_in, tangents_in, **params)
        return [JVPTracer(self, x, t) for x, t in zip(primals_out, tangents_out, strict=True)]


def jvp_flat(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], *,
             linearize: bool = False):
    """Pushes tangents (possibly Zero) through f; returns primal and tangent outputs
    (`linearize`: for linearize_flat, which only changes how the tracers print)."""
    with core.new_main(JVPTrace, "linearize" if linearize else None) as main:
        trace = JVPTrace(main)
        tracers_in = [JVPTracer(trace, x, t) for x, t in zip(primals, tangents, strict=True)]
        outs = f(*tracers_in)
        tracers_out = [core.full_raise(trace, out) for out in outs]
        primals_out = [t.primal for t in tracers_out]
        tangents_out = [t.tangent for t in tracers_out]
    return primals_out, tangents_out


# ----------------------------------------------------------------------------- rule helpers


def defjvp(prim: Primitive, *jvp_fns: Callable | None) -> None:
    """One tangent function per operand, `fn(t, ans, *primals, **params)`; None = no effect."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        tangent_out: Any = Zero(tangent_aval(get_aval(ans)))
        for fn, t in zip(jvp_fns, tangents, strict=True):
            if fn is not None and type(t) is not Zero:
                tangent_out = add_tangents(tangent_out, fn(t, ans, *primals, **params))
        return [ans], [tangent_out]

    jvp_rules[prim] = rule


def deflinear(prim: Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all its operands: the jvp applies it to the tangents."""

    def rule(primals, tangents, **params):
        primals_out = core.bind(prim, *primals, **params)
        if all(type(t) is Zero for t in tangents):
            return primals_out, [Zero(tangent_aval(get_aval(x))) for x in primals_out]
        tangents_out = core.bind(prim, *map(instantiate_zeros, tangents), **params)
        return primals_out, tangents_out

    jvp_rules[prim] = rule
    transpose_rules[prim] = transpose_rule


def defbilinear(prim: Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """A primitive linear in each operand separately (mul, dot_general)."""
    defjvp(
        prim,
        lambda t, ans, x, y, **p: prim.bind(t, y, **p),
        lambda t, ans, x, y, **p: prim.bind(x, t, **p),
    )

    def transpose(cts, x, y, **params):
        (ct,) = cts
        if is_undefined_primal(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]

    transpose_rules[prim] = transpose


jvp_rules[add_any_p] = lambda primals, tangents: (
    [add_any_p.bind(*primals)],
    [add_tangents(*tangents)],
)
transpose_rules[add_any_p] = lambda cts, x, y: [cts[0], cts[0]]


# ----------------------------------------------------------------------------- reverse mode


class UndefinedPrimal:
    """A linear input of a transposed equation: only its aval is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def linearize_flat(f: Callable, primals_in: Sequence[Any]):
    """Evaluates f and returns (primal outputs, linear jaxpr of the tangents, its consts,
    which inputs are differentiable)."""
    differentiable = [dtypes.is_inexact(get_aval(x).dtype) for x in primals_in]
    n = len(primals_in)
    diff_avals = [get_aval(x) for x, d in zip(primals_in, differentiable, strict=True) if d]
    pvals_in = [pe.PartialVal.known(x) for x in primals_in] + [
        pe.PartialVal.unknown(aval) for aval in diff_avals
    ]

    def f_jvp(*primals_and_tangents):
        primals = primals_and_tangents[:n]
        tangents_iter = iter(primals_and_tangents[n:])
        tangents = [
            next(tangents_iter) if d else Zero.from_primal_value(x)
            for x, d in zip(primals, differentiable, strict=True)
        ]
        primals_out, tangents_out = jvp_flat(f, primals, tangents, linearize=True)
        return [*primals_out, *map(instantiate_zeros, tangents_out)]

    jaxpr, pvals_out, consts = _partial_eval_tangents(f_jvp, pvals_in)
    n_out = len(pvals_out) // 2
    primals_out = [p.const for p in pvals_out[:n_out]]
    return primals_out, jaxpr, consts, differentiable


def _partial_eval_tangents(f, pvals_in):
    """Partial evaluation of f (primal outs, then tangent outs) that keeps every tangent output
    in the jaxpr, known or not, so output cotangents line up with jaxpr outputs."""
    with core.new_main(pe.PartialEvalTrace) as main:
        trace = pe.PartialEvalTrace(main)
        tracers_in = [trace.new_arg(pval) for pval in pvals_in]
        outs = f(*tracers_in)
        half = len(outs) // 2
        tracers_out = [core.full_raise(trace, out) for out in outs]
        tangent_tracers = [trace.instantiate_const(t) for t in tracers_out[half:]]
        primal_tracers = tracers_out[:half]
        for t in primal_tracers:
            if not t.pval.is_known:
                raise core.UnexpectedTracerError(
                    "linearize: a primal output depends on a tangent; a transformation rule "
                    "mixed primal and tangent values"
                )
        unk_in = [t for t in tracers_in if not t.pval.is_known]
        jaxpr, consts = pe.tracers_to_jaxpr(unk_in, tangent_tracers)
        pvals_out = [t.pval for t in primal_tracers] + [t.pval for t in tangent_tracers]
    return jaxpr, pvals_out, consts


class Pullback:
    """Output cotangents -> input cotangents (Zero for non-differentiable inputs) through a
    linear jaxpr and its residuals (`consts`), which api.vjp's VJP object exposes as leaves."""

    def __init__(self, jaxpr: core.Jaxpr, consts: Sequence[Any], in_avals: Sequence[ShapedArray],
                 differentiable: Sequence[bool]) -> None:
        self.jaxpr, self.consts = jaxpr, list(consts)
        self.in_avals, self.differentiable = tuple(in_avals), tuple(differentiable)

    def __call__(self, *cts_out: Any) -> list[Any]:
        undefined = [UndefinedPrimal(v.aval) for v in self.jaxpr.invars]
        cts_iter = iter(backward_pass(self.jaxpr, self.consts, undefined, cts_out))
        return [next(cts_iter) if d else Zero(tangent_aval(aval))
                for aval, d in zip(self.in_avals, self.differentiable, strict=True)]


def vjp_flat(f: Callable, primals_in: Sequence[Any]):
    """Returns f's outputs and a function from output cotangents to input cotangents (a
    Pullback, unless a hook wraps it)."""
    primals_out, jaxpr, consts, differentiable = linearize_flat(f, primals_in)
    f_vjp = Pullback(jaxpr, consts, [get_aval(x) for x in primals_in], differentiable)
    if vjp_hooks:  # shard_map bodies with check_vma adjust cotangents (parallel/vma.py)
        f_vjp = vjp_hooks[0](primals_in, primals_out, f_vjp)
    return primals_out, f_vjp


vjp_hooks: list[Callable] = []


def backward_pass(jaxpr: core.Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                  cts_out: Sequence[Any]) -> list[Any]:
    """Transposes a linear jaxpr: cotangents of the outputs -> cotangents of the linear inputs
    (Zero where nothing flowed)."""
    primal_env: dict[Var, Any] = {}
    ct_env: dict[Var, Any] = {}

    def read_primal(x):
        if isinstance(x, Literal):
            return x.val
        return primal_env.get(x, UndefinedPrimal(x.aval))

    def read_cotangent(v: Var) -> Any:
        return ct_env.pop(v, Zero(v.aval))

    def write_cotangent(x, ct) -> None:
        if isinstance(x, Var) and ct is not None and type(ct) is not Zero:
            ct_env[x] = add_tangents(ct_env[x], ct) if x in ct_env else ct

    for v, val in zip(jaxpr.constvars, consts, strict=True):
        primal_env[v] = val
    for v, val in zip(jaxpr.invars, args, strict=True):
        if not is_undefined_primal(val):
            primal_env[v] = val
    for v, ct in zip(jaxpr.outvars, cts_out, strict=True):
        write_cotangent(v, ct)
    # Equations on defined values only (a checkpoint recomputing its primal) run forward first.
    for eqn in jaxpr.eqns:
        if all(isinstance(x, Literal) or x in primal_env for x in eqn.invars):
            outs = core.bind(eqn.primitive, *map(read_primal, eqn.invars), **eqn.params)
            primal_env.update(zip(eqn.outvars, outs, strict=True))

    for eqn in jaxpr.eqns[::-1]:
        cts_in = [read_cotangent(v) for v in eqn.outvars]
        if all(type(ct) is Zero for ct in cts_in):
            continue
        primals_in = [read_primal(x) for x in eqn.invars]
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}' "
                "is not implemented."
            )
        if not eqn.primitive.multiple_results:
            cts_in = [instantiate_zeros(ct) for ct in cts_in]
        cts_out_eqn = rule(cts_in, *primals_in, **eqn.params)
        for x, ct in zip(eqn.invars, cts_out_eqn, strict=True):
            write_cotangent(x, ct)
    return [read_cotangent(v) for v in jaxpr.invars]


def unbroadcast(ct: Any, aval: ShapedArray) -> Any:
    """Sums a cotangent back down to a rank-0 operand that an elementwise op broadcast."""
    from numbax._src.lax import reductions  # lax sits above the interpreters

    ct_shape = get_aval(ct).shape
    if aval.shape == () and ct_shape != ():
        ct = reductions.reduce_sum(ct, tuple(range(len(ct_shape))))
    if get_aval(ct).dtype != aval.dtype and aval.dtype != dtypes.float0:
        from numbax._src.lax import elementwise

        ct = elementwise.convert_element_type(ct, aval.dtype)
    return ct


def jvp_jaxpr(closed: core.ClosedJaxpr, nonzeros: Sequence[bool],
              instantiate: Sequence[bool] | bool) -> tuple[core.ClosedJaxpr, list[bool]]:
    """The jvp of a jaxpr: (primals..., nonzero tangents...) -> (primals_out..., tangents_out
    that are nonzero or instantiated...). Returns it and which output tangents it has."""
    in_avals = closed.in_avals
    n = len(in_avals)
    n_out = len(closed.out_avals)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    store: dict[str, list[bool]] = {}

    def f(*args):
        tangents_nz = iter(args[n:])
        tangents = [next(tangents_nz) if nz else Zero(tangent_aval(a))
                    for nz, a in zip(nonzeros, in_avals, strict=True)]
        primals_out, tangents_out = jvp_flat(
            lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), args[:n], tangents)
        out_nz = [type(t) is not Zero or inst
                  for t, inst in zip(tangents_out, instantiate, strict=True)]
        store["out_nz"] = out_nz
        return [*primals_out, *[instantiate_zeros(t)
                                for t, nz in zip(tangents_out, out_nz, strict=True) if nz]]

    avals = [*in_avals, *[tangent_aval(a) for a, nz in zip(in_avals, nonzeros, strict=True)
                          if nz]]
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(f, avals)
    return pe.hoist_consts(core.ClosedJaxpr(jaxpr, consts)), store["out_nz"]


def transpose_jaxpr(closed: core.ClosedJaxpr, linear: Sequence[bool],
                    ct_avals: Sequence[ShapedArray]) -> core.ClosedJaxpr:
    """The transpose of a jaxpr linear in the inputs marked `linear`:
    (non-linear inputs..., output cotangents...) -> cotangents of the linear inputs
    (zeros instantiated)."""
    in_avals = closed.in_avals
    res_avals = [a for a, lin in zip(in_avals, linear, strict=True) if not lin]
    lin_avals = [a for a, lin in zip(in_avals, linear, strict=True) if lin]

    def f(*args):
        res, cts = args[:len(res_avals)], args[len(res_avals):]
        res_it = iter(res)
        primals = [UndefinedPrimal(a) if lin else next(res_it)
                   for a, lin in zip(in_avals, linear, strict=True)]
        cts_in = backward_pass(closed.jaxpr, closed.consts, primals, cts)
        lin_cts = [ct for ct, lin in zip(cts_in, linear, strict=True) if lin]
        return [zeros_like_aval(a) if type(ct) is Zero else ct
                for ct, a in zip(lin_cts, lin_avals, strict=True)]

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(f, [*res_avals, *ct_avals])
    return pe.hoist_consts(core.ClosedJaxpr(jaxpr, consts))
