"""The extension API's core names (jax.extend.core, jax.core) that numbax's own core does not
need: tokens, effects, call primitives, jaxpr utilities and trace-state queries."""
from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from numbax._src import core, dtypes, typecheck
from numbax._src.array import Array
from numbax._src.core import (  # noqa: F401 - jaxprs_in_params: jax.extend.core's name
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Primitive,
    ShapedArray,
    Var,
    jaxprs_in_params,
)
from numbax._src.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe

# ----------------------------------------------------------------------------- avals and values


class _AbstractValueMeta(type):
    """isinstance/issubclass of the root AbstractValue also accept numbax's ShapedArray."""

    def __instancecheck__(cls, obj: Any) -> bool:
        root = cls.__dict__.get("_root", False)
        return (root and isinstance(obj, ShapedArray)) or super().__instancecheck__(obj)

    def __subclasscheck__(cls, other: type) -> bool:
        root = cls.__dict__.get("_root", False)
        return (root and issubclass(other, ShapedArray)) or super().__subclasscheck__(other)


class AbstractValue(metaclass=_AbstractValueMeta):
    """The base class of abstract values; numbax's ShapedArray counts as one."""

    _root = True


class AbstractToken(ShapedArray):
    """The abstract value of a token (printed `Tok`); it orders side effects and holds no data.

    numbax has no side-effect ordering to enforce, so a token is a 0-d value that carries no
    information; it exists so that programs written against JAX's token API run unchanged."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__((), np.bool_)

    def str_short(self) -> str:
        return "Tok"

    def __eq__(self, other: object) -> bool:
        return type(other) is AbstractToken

    def __hash__(self) -> int:
        return hash(AbstractToken)

    def __repr__(self) -> str:
        return "AbstractToken()"


abstract_token = AbstractToken()


class Token(Array):
    """A token value (what lax.create_token and lax.after_all return)."""

    __slots__ = ()

    @classmethod
    def new(cls) -> Token:
        return cls._from_numpy(np.zeros((), np.bool_))

    @property
    def aval(self) -> AbstractToken:
        return abstract_token

    def __repr__(self) -> str:
        return "Token()"

    __str__ = __repr__


array_types: set[type] = {np.ndarray, Array, *[np.dtype(t).type for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128)]}


def valid_jaxtype(x: Any) -> bool:
    """Whether x is a value numbax can trace (an array, a numpy scalar or a Python number)."""
    try:
        core.get_aval(x)
    except TypeError:
        return False
    return True


def primal_dtype_to_tangent_dtype(primal_dtype: Any) -> np.dtype:
    """float0 for integer and boolean primals, the primal dtype for inexact ones."""
    dtype = np.dtype(primal_dtype)
    return dtype if dtypes.is_inexact(dtype) else dtypes.float0


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """The aval of one example of `aval` mapped along `axis` (of length `size`)."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise NumbaxValueError(
            f"mapped_aval: aval has shape {aval.shape}, expected size {size} at axis {axis}.")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray,
                  explicit_mesh_axis: Any = None) -> ShapedArray:
    """The aval of `size` stacked examples of `aval`, the new axis at `axis`."""
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (int(size),) + aval.shape[axis:])


def max_dim(d1: int, d2: int) -> int:
    """max(d1, d2) for dimension sizes (numbax has no symbolic dimensions)."""
    return max(operator.index(d1), operator.index(d2))


def min_dim(d1: int, d2: int) -> int:
    """min(d1, d2) for dimension sizes (numbax has no symbolic dimensions)."""
    return min(operator.index(d1), operator.index(d2))


class InconclusiveDimensionOperation(Exception):
    """A comparison of symbolic dimensions had no definite answer (never raised by numbax,
    whose dimensions are all concrete; defined so code that catches it runs)."""


# ----------------------------------------------------------------------------- effects, debug info


class Effect:
    """The base class of side effects a jaxpr may have (numbax's primitives have none)."""


Effects = frozenset
no_effects: frozenset = frozenset()


class DebugInfo(NamedTuple):
    """Where a traced function came from: what traced it, its name and its argument and result
    paths."""

    traced_for: str
    func_src_info: str
    arg_names: tuple[str, ...] | None
    result_paths: tuple[str, ...] | None

    @property
    def func_name(self) -> str:
        return self.func_src_info.split(" ")[0] if self.func_src_info else "<unknown>"


class TraceTag:
    """An identity token for a transformation's traces (all tags compare equal, as in JAX)."""

    def __hash__(self) -> int:
        return hash(TraceTag)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TraceTag)


# ----------------------------------------------------------------------------- jaxpr utilities


class DropVar(Var):
    """An equation output that nobody reads."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "_"


def gensym(suffix: str = "") -> Callable[[ShapedArray], Var]:
    """A factory of fresh variables: `gensym()(aval)` is a new Var of that aval."""
    return Var


def new_jaxpr_eqn(invars: Sequence[Any], outvars: Sequence[Var], primitive: Primitive,
                  params: dict, effects: Any = no_effects, source_info: Any = None,
                  ctx: Any = None) -> JaxprEqn:
    """A jaxpr equation `outvars = primitive[params] invars`."""
    for x in invars:
        if not isinstance(x, (Var, core.Literal)):
            raise NumbaxTypeError(
                f"new_jaxpr_eqn: invars has {type(x).__name__}, expected Var or Literal.")
    return JaxprEqn(primitive, list(invars), list(outvars), dict(params))


def subjaxprs(jaxpr: Jaxpr) -> Iterator[Jaxpr]:
    """The jaxprs in the params of jaxpr's equations (one level deep)."""
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Raises JaxprTypeError unless every variable is bound once before use and every
    equation's output types follow from its inputs."""
    typecheck.typecheck_jaxpr(jaxpr)


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr, *args: Any) -> Any:
    """The closed jaxpr as a function of its inputs (list of outputs); with args, calls it."""
    fun = functools.partial(eval_jaxpr, closed_jaxpr.jaxpr, closed_jaxpr.consts)
    return fun(*args) if args else fun


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any,
               propagate_source_info: bool = True) -> list[Any]:
    """Evaluates a jaxpr by binding each equation's primitive, so it composes with every
    transformation; returns the list of outputs."""
    return core.eval_jaxpr(jaxpr, consts, *args)


def concrete_or_error(force: Callable | None, val: Any, context: str = "") -> Any:
    """`force(val)` (identity when force is None) for a concrete val; a traced val without a
    concrete value raises ConcretizationTypeError naming `context`."""
    force = (lambda x: x) if force is None else force
    if isinstance(val, core.Tracer):
        value = val.to_concrete_value()
        if value is None:
            raise ConcretizationTypeError(val._describe(), context)
        return force(value)
    return force(val)


# ----------------------------------------------------------------------------- call primitives


class CallPrimitive(Primitive):
    """A primitive that calls a function: `bind(fun, *args, **params)` traces `fun` (flat
    arrays in, a list of arrays out) into the equation's `call_jaxpr` param and runs it; jvp,
    transpose and vmap go through the jaxpr."""

    call_primitive = True

    def __init__(self, name: str) -> None:
        super().__init__(name, multiple_results=True)
        core.abstract_eval_rules[self] = _call_abstract_eval
        core.impl_rules[self] = _call_impl
        ad.jvp_rules[self] = functools.partial(_call_jvp, self)
        ad.transpose_rules[self] = functools.partial(_call_transpose, self)
        batching.def_body_rule(self, functools.partial(_call_batch, self))
        pe.partial_eval_rules[self] = functools.partial(_call_partial_eval, self)

    def bind(self, fun: Callable, *args: Any, **params: Any) -> list[Any]:  # type: ignore[override]
        avals = [core.get_aval(x) for x in args]
        jaxpr, consts = pe.trace_to_jaxpr_dynamic(lambda *xs: list(fun(*xs)), avals)
        closed = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])
        return core.bind(self, *consts, *args, call_jaxpr=closed, **params)


def call_impl(f: Callable, *args: Any, **params: Any) -> Any:
    """A call primitive's evaluation: f applied to args (params describe the call, not f)."""
    return f(*args)


def _call_abstract_eval(*avals, call_jaxpr, **params):
    return list(call_jaxpr.out_avals)


def _call_impl(*args, call_jaxpr, **params):
    return [core.to_numpy(x) for x in core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)]


def _call_jvp(prim, primals, tangents, *, call_jaxpr, **params):
    nonzeros = [type(t) is not ad.Zero for t in tangents]
    jvp, out_nz = ad.jvp_jaxpr(call_jaxpr, nonzeros, instantiate=False)
    nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
    outs = core.bind(prim, *primals, *nz_tangents, call_jaxpr=jvp, **params)
    n = len(call_jaxpr.out_avals)
    it = iter(outs[n:])
    tangents_out = [next(it) if nz else ad.Zero(ad.tangent_aval(a))
                    for nz, a in zip(out_nz, call_jaxpr.out_avals, strict=True)]
    return outs[:n], tangents_out


def _call_transpose(prim, cts, *args, call_jaxpr, **params):
    linear = [ad.is_undefined_primal(x) for x in args]
    ct_avals = list(call_jaxpr.out_avals)
    transposed = ad.transpose_jaxpr(call_jaxpr, linear, ct_avals)
    res = [x for x, lin in zip(args, linear, strict=True) if not lin]
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    lin_cts = iter(core.bind(prim, *res, *cts, call_jaxpr=transposed, **params))
    return [next(lin_cts) if lin else None for lin in linear]


def _call_partial_eval(prim, trace, tracers, *, call_jaxpr, **params):
    """Runs the known part of the call now; records the rest as a call of the unknown part."""
    in_unknowns = [not t.pval.is_known for t in tracers]
    known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(call_jaxpr, in_unknowns)
    known_outs = core.bind(prim, *[t.pval.const for t in tracers if t.pval.is_known],
                           call_jaxpr=known, **params)
    n_known = len(known_outs) - num_res
    res_tracers = [trace.instantiate_const(trace.lift(r)) for r in known_outs[n_known:]]
    unknown_tracers = [t for t in tracers if not t.pval.is_known]
    unknown_outs = pe.default_process_primitive(
        trace, prim, [*res_tracers, *unknown_tracers], dict(params, call_jaxpr=unknown))
    known_it, unknown_it = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(unknown_it) if uk else trace.lift(next(known_it)) for uk in out_unknowns]


def _call_batch(prim, axis_data, vals, dims, *, call_jaxpr, **params):
    vals = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(vals, dims,
                                                                             strict=True)]
    batched = [d is not None for d in dims]
    jaxpr, out_batched = batching.batch_jaxpr(call_jaxpr, axis_data, batched, False)
    outs = core.bind(prim, *vals, call_jaxpr=jaxpr, **params)
    return outs, [0 if b else None for b in out_batched]



# ----------------------------------------------------------------------------- trace state


class OpaqueTraceState:
    """Compares equal to another snapshot exactly when the interpreter stack is the same."""

    def __init__(self, mains: tuple, dynamic: Any) -> None:
        self._key = (tuple(id(m) for m in mains), id(dynamic))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueTraceState) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)


def get_opaque_trace_state(convention: Any = None) -> OpaqueTraceState:
    """A snapshot of the trace state, to check later that it has not changed."""
    return OpaqueTraceState(tuple(core._state.trace_stack), core._state.dynamic_trace)


def find_top_trace(xs: Sequence[Any]) -> core.Trace:
    """The trace a primitive applied to xs would run in (the innermost one involved)."""
    return core.find_top_trace(list(xs))


def _current_main() -> core.MainTrace:
    dynamic = core._state.dynamic_trace
    top = core._state.trace_stack[-1]
    return dynamic if dynamic is not None and dynamic.level >= top.level else top


@contextlib.contextmanager
def take_current_trace() -> Iterator[core.Trace]:
    """Yields the innermost trace; inside the block, new values are evaluated eagerly."""
    main = _current_main()
    with core.new_dynamic(None):
        yield main.trace_type(main)


@contextlib.contextmanager
def set_current_trace(trace: core.Trace | None, check_leaks: bool = False) -> Iterator[None]:
    """Inside the block, primitives applied to plain values run in `trace` (None or the eval
    trace: eagerly)."""
    main = None if trace is None or isinstance(trace, core.EvalTrace) else trace.main
    with core.new_dynamic(main):
        yield


@contextlib.contextmanager
def eval_context() -> Iterator[None]:
    """Inside the block, primitives on concrete values run eagerly even under jit."""
    with core.new_dynamic(None):
        yield


ensure_compile_time_eval = eval_context


def _axis_datas() -> list[batching.AxisData]:
    return [m.global_data for m in core._state.trace_stack
            if isinstance(m.global_data, batching.AxisData)]


def nonempty_axis_env() -> bool:
    """Whether any named axis (of a vmap or pmap) is bound here."""
    return any(d.name is not None for d in _axis_datas())


def unsafe_get_axis_names() -> list[Any]:
    """The names of the axes bound here, outermost first."""
    return [d.name for d in _axis_datas() if d.name is not None]


def unsafe_am_i_under_a_jit() -> bool:
    """Whether a jit (or make_jaxpr) is tracing the current code."""
    return any(issubclass(m.trace_type, pe.DynamicJaxprTrace) for m in core._state.trace_stack)


def unsafe_am_i_under_a_vmap() -> bool:
    """Whether a vmap is tracing the current code."""
    return any(issubclass(m.trace_type, batching.BatchTrace) for m in core._state.trace_stack)
