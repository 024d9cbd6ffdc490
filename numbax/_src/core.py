"""The traced core: avals, the jaxpr IR and its printer, primitives, and the interpreter stack."""
from __future__ import annotations

import contextlib
import itertools
import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from numbax._src import dtypes
from numbax._src.avals import ShapedArray, literal_value, raise_to_shaped  # noqa: F401
from numbax._src.core_pp import (  # noqa: F401  (core's printing API)
    PrintNames,
    pp_atom,
    pp_eqn,
    pp_jaxpr,
    pp_jaxpr_lines,
    pp_literal,
    pp_param,
)
from numbax._src.dtypes import kind_of
from numbax._src.errors import (
    ConcretizationTypeError,
    JaxprTypeError,  # noqa: F401  (core's name, as in jax.core)
    NumbaxTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

# ----------------------------------------------------------------------------- avals

_PYTHON_SCALARS = (bool, int, float, complex)


def get_aval(x: Any) -> ShapedArray:
    """The aval of a concrete value or tracer; refuses what is not an array."""
    if isinstance(x, Tracer):
        return x.aval
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if isinstance(x, (np.ndarray, np.generic)):  # before Python scalars: np.float64 is a float
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
    if isinstance(x, _PYTHON_SCALARS):
        return ShapedArray((), dtypes.python_scalar_dtype(x), weak_type=True)
    raise NumbaxTypeError(
        f"numbax: value of type {type(x).__name__} is not a valid array type. "
        "Pass numpy arrays, numbax Arrays or Python scalars."
    )


def is_array_like(x: Any) -> bool:
    return isinstance(x, (Tracer, np.ndarray, np.generic, *_PYTHON_SCALARS)) or isinstance(
        getattr(x, "aval", None), ShapedArray
    )


def to_numpy(x: Any) -> np.ndarray:
    """A concrete value as a numpy array of its canonical dtype (no copy when possible)."""
    value = getattr(x, "_value", None)
    if value is not None:
        return value
    aval = get_aval(x)
    return np.asarray(x, dtype=aval.dtype)


# ----------------------------------------------------------------------------- the IR


class Var:
    """A jaxpr variable; identity is the object, names are given when printing."""

    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval
        self.count = next(Var._counter)

    def __repr__(self) -> str:
        shape = ",".join(str(d) for d in self.aval.shape)
        return f"Var(id={id(self)}):{self.aval.dtype.name}[{shape}]"  # JAX's form


class Literal:
    """A constant scalar inlined in a jaxpr."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray) -> None:
        self.val = np.asarray(val, dtype=aval.dtype)[()]
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val})"


Atom = Var | Literal


class JaxprEqn(NamedTuple):
    primitive: Primitive
    invars: list[Atom]
    outvars: list[Var]
    params: dict[str, Any]

    def __repr__(self) -> str:
        return pp_eqn(self, PrintNames(), 0)


class Jaxpr:
    """A typed, closed-over-nothing program: constvars and invars in, a list of outvars out."""

    __slots__ = ("constvars", "invars", "eqns", "outvars")

    def __init__(self, constvars, invars, eqns, outvars) -> None:
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self) -> str:
        return pp_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]) -> None:
        assert len(jaxpr.constvars) == len(consts)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    literals = property(lambda self: self.consts)  # JAX's other name for consts

    def __str__(self) -> str:
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__


def jaxprs_in_params(params: dict) -> Iterator[Jaxpr]:
    """The jaxprs an equation's params hold (closed ones unwrapped), not descending into them."""
    for val in params.values():
        for v in val if isinstance(val, tuple) else (val,):
            if isinstance(v, Jaxpr):
                yield v
            elif isinstance(v, ClosedJaxpr):
                yield v.jaxpr


# ----------------------------------------------------------------------------- primitives

abstract_eval_rules: dict[Primitive, Callable[..., list[ShapedArray]]] = {}
impl_rules: dict[Primitive, Callable[..., list[Any]]] = {}
# Primitives whose abstract evaluation reads nothing but its avals, its params and the trace
# context (no axis environment, no callable): an eager call may reuse the answer an earlier one
# with the same types got (dispatch.out_avals_of).
avals_only: set[Primitive] = set()
# Primitives with side effects (callbacks, prints, stateful generators): an equation of one is
# never dropped by DCE, merged by CSE or folded, even when nothing reads its outputs.
effectful_primitives: set[Primitive] = set()

# Explicit-sharding types: outputs of explicitly sharded operands (rule: sharding/rules.py).
sharding_rules: list[Callable[..., list[ShapedArray]]] = []


_primitives_by_name: dict[str, Primitive] = {}


def primitive_by_name(name: str) -> Primitive:
    return _primitives_by_name[name]


class Primitive:
    """An operation of the IR; rules are looked up in the per-kind dicts keyed by primitive."""

    def __init__(self, name: str, multiple_results: bool = False) -> None:
        self.name = name
        self.multiple_results = multiple_results
        _primitives_by_name.setdefault(name, self)  # numbax's own keep their names

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        # Unpickles (in a pmap worker) to the registered singleton, so rule lookups still work.
        return (primitive_by_name, (self.name,))

    def bind(self, *args: Any, **params: Any) -> Any:
        outs = bind(self, *args, **params)
        return outs if self.multiple_results else outs[0]

    # JAX's rule API (jax.extend.core.Primitive): rules take and return one value, or a
    # sequence when multiple_results; numbax's rule tables hold list-returning rules.
    def _listed(self, rule: Callable) -> Callable:
        return lambda *xs, **params: (list if self.multiple_results else _one)(rule(*xs, **params))

    def def_impl(self, impl: Callable) -> Callable:
        impl_rules[self] = self._listed(impl)
        return impl

    def def_abstract_eval(self, rule: Callable) -> Callable:
        abstract_eval_rules[self] = self._listed(rule)
        return rule

    def def_effectful_abstract_eval(self, rule: Callable) -> Callable:
        abstract_eval_rules[self] = self._listed(lambda *avals, **ps: rule(*avals, **ps)[0])
        effectful_primitives.add(self)  # its effects keep its equations alive
        return rule

    def impl(self, *args: Any, **params: Any) -> Any:
        outs = impl_rules[self](*args, **params)
        return outs if self.multiple_results else outs[0]

    def abstract_eval(self, *avals: Any, **params: Any) -> tuple[Any, frozenset]:
        outs = abstract_eval(self, avals, params)
        return (outs if self.multiple_results else outs[0]), frozenset()  # no effects


def _one(x: Any) -> list:
    return [x]


# Primitives without operands whose trace is not found from operands (axis_index: the vmap
# that owns its axis name): prim -> bind(**params) -> list of outputs.
operandless_binds: dict[Primitive, Callable] = {}


# Primitives holding jaxprs (loops, branches): prim -> raise(args, params) -> args, raised
# into an enclosing trace that must see the primitive though no operand is its tracer (a
# vmap whose axis a collective in the body names: psum(1, "i") in a loop is the axis size).
operand_raisers: dict[Primitive, Callable] = {}


def bind(prim: Primitive, *args: Any, **params: Any) -> list[Any]:
    """The one interception point: find the top trace, raise the args to it, apply its rule."""
    if not args and prim in operandless_binds:
        return operandless_binds[prim](**params)
    if prim in operand_raisers:
        args = operand_raisers[prim](args, params)
    if evaluates_eagerly() and not any(isinstance(x, Tracer) for x in args):
        return _eager(prim, list(args), params)  # (find_top_trace's answer: the EvalTrace)
    top_trace = find_top_trace(args)
    tracers = [full_raise(top_trace, arg) for arg in args]
    outs = top_trace.process_primitive(prim, tracers, params)
    return [full_lower(out) for out in outs]


def abstract_eval(prim: Primitive, avals: Sequence[ShapedArray], params: dict) -> list:
    rule = abstract_eval_rules.get(prim)
    if rule is None:
        raise NotImplementedError(f"primitive {prim.name} has no abstract evaluation rule")
    outs = rule(*avals, **params)
    if sharding_rules and any(getattr(a, "_sharding", None) is not None for a in avals):
        return sharding_rules[0](prim, avals, params, outs)
    return outs


# ----------------------------------------------------------------------------- traces


class MainTrace:
    """One level of the interpreter stack; `active` turns False when its transform ends."""

    __slots__ = ("level", "trace_type", "global_data", "active")

    def __init__(self, level: int, trace_type: type, global_data: Any) -> None:
        self.level = level
        self.trace_type = trace_type
        self.global_data = global_data
        self.active = True

    def __repr__(self) -> str:
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class _TraceState(threading.local):
    def __init__(self) -> None:
        self.trace_stack: list[MainTrace] = [MainTrace(0, EvalTrace, None)]
        self.dynamic_trace: MainTrace | None = None


_state = None  # created below, once EvalTrace exists


@contextlib.contextmanager
def new_main(trace_type: type, global_data: Any = None) -> Iterator[MainTrace]:
    stack = _state.trace_stack
    main = MainTrace(len(stack), trace_type, global_data)
    stack.append(main)
    try:
        yield main
    finally:
        main.active = False
        stack.pop()


@contextlib.contextmanager
def new_dynamic(main: MainTrace) -> Iterator[None]:
    prev, _state.dynamic_trace = _state.dynamic_trace, main
    try:
        yield
    finally:
        _state.dynamic_trace = prev


def trace_stack_depth() -> int:
    return len(_state.trace_stack)


def evaluates_eagerly() -> bool:
    """Whether an operation whose operands are not tracers runs eagerly now (find_top_trace
    gives the EvalTrace): no staging trace (jit's) is set."""
    return _state.dynamic_trace is None


class Trace:
    def __init__(self, main: MainTrace) -> None:
        self.main = main

    def pure(self, val: Any) -> Any:
        raise NotImplementedError

    def lift(self, val: Any) -> Any:
        raise NotImplementedError

    def process_primitive(self, primitive: Primitive, tracers: list, params: dict) -> list:
        raise NotImplementedError


# Eager execution is installed by dispatch.py (core imports nothing above itself): Array and
# the GPU path live above the core.
_eager: Callable[[Primitive, list, dict], list] | None = None


def install_eager(apply: Callable[[Primitive, list, dict], list]) -> None:
    """Sets the function EvalTrace runs primitives with (dispatch.apply_primitive)."""
    global _eager
    _eager = apply


class EvalTrace(Trace):
    """Eager evaluation: each primitive runs its implementation (dispatch.py)."""

    pure = lift = staticmethod(lambda x: x)

    def process_primitive(self, primitive: Primitive, tracers: list, params: dict) -> list:
        return _eager(primitive, tracers, params)


_state = _TraceState()


def short_repr(x: Any) -> str:
    """A tracer's short repr, or str of a value, as JAX prints the parts of a tracer."""
    return x._short_repr() if isinstance(x, Tracer) else str(x)


class Tracer:
    """A value being traced by some transform; operators are installed by array_methods."""

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    aval: ShapedArray

    def __init__(self, trace: Trace) -> None:
        self._trace = trace

    def full_lower(self) -> Any:
        return self

    def to_concrete_value(self) -> Any:
        """The concrete value behind this tracer, or None when it has none."""
        return None

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def _describe(self) -> str:
        return f"traced array with shape {self.aval.str_short()}"

    def _concrete_or_raise(self, context: str) -> Any:
        value = self.to_concrete_value()
        if value is None:
            raise ConcretizationTypeError(self._describe(), context)
        return value

    def __bool__(self) -> bool:
        value = self.to_concrete_value()
        if value is None:
            raise TracerBoolConversionError(self._describe())
        return bool(value)

    def __int__(self) -> int:
        return int(self._concrete_or_raise("int()"))

    def __float__(self) -> float:
        return float(self._concrete_or_raise("float()"))

    def __complex__(self) -> complex:
        return complex(self._concrete_or_raise("complex()"))

    def item(self, *args) -> Any:
        return np.asarray(self._concrete_or_raise("item()")).item(*args)

    def tolist(self) -> Any:
        return np.asarray(self._concrete_or_raise("tolist()")).tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return np.asarray(self._concrete_or_raise("tobytes()")).tobytes(order)

    def __index__(self) -> int:
        value = self.to_concrete_value()
        if value is None or kind_of(self.aval.dtype) not in "iub":
            raise TracerIntegerConversionError(self._describe())
        return operator.index(np.asarray(value)[()])

    def __array__(self, dtype=None, copy=None):
        value = self.to_concrete_value()
        if value is None:
            raise TracerArrayConversionError(self._describe())
        return np.asarray(value, dtype=dtype)

    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: {type(self).__name__} (numbax arrays are unhashable)")

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __repr__(self) -> str:  # JAX's short form: JitTracer(~int32[]), VmapTracer(aval=..)
        return self._short_repr()

    def _short_repr(self) -> str:
        return f"{type(self).__name__}<{self.aval}>"

    def __setitem__(self, idx, value):
        raise TypeError(
            f"{type(self).__name__} does not support item assignment: numbax arrays are "
            "immutable. Use x = x.at[idx].set(value) instead of x[idx] = value."
        )


def full_lower(val: Any) -> Any:
    return val.full_lower() if isinstance(val, Tracer) else val


def find_top_trace(xs: Sequence[Any]) -> Trace:
    mains = [x._trace.main for x in xs if isinstance(x, Tracer)]
    top_main = max(mains, default=_state.trace_stack[0], key=operator.attrgetter("level"))
    dynamic = _state.dynamic_trace
    if dynamic is not None and dynamic.level > top_main.level:
        top_main = dynamic
    return top_main.trace_type(top_main)


def _check_alive(val: Tracer) -> None:
    main = val._trace.main
    if not main.active:
        raise UnexpectedTracerError(
            f"Encountered an unexpected tracer: {val._describe()} created by a "
            f"{main.trace_type.__name__} that has already finished. A traced value escaped its "
            "transformation, usually by being stored in a global or an outer-scope variable "
            "inside a jitted or transformed function. Return it as an output instead."
        )


def full_raise(trace: Trace, val: Any) -> Tracer | Any:
    if not isinstance(val, Tracer):
        return trace.pure(val)
    _check_alive(val)
    level = trace.main.level
    if val._trace.main is trace.main:
        return val
    if val._trace.main.level < level:
        return trace.lift(val)
    raise UnexpectedTracerError(
        f"Encountered a tracer {val._describe()} from an inner transformation at an outer "
        "level: a traced value escaped its transformation. Return it as an output instead."
    )


# ----------------------------------------------------------------------------- evaluation


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    """Interprets a jaxpr by binding each equation's primitive (so it composes with traces)."""
    env: dict[Var, Any] = {}

    def read(x: Atom) -> Any:
        return literal_value(x.val, x.aval) if isinstance(x, Literal) else env[x]

    for v, val in zip(jaxpr.constvars, consts, strict=True):
        env[v] = val
    for v, val in zip(jaxpr.invars, args, strict=True):
        env[v] = val
    for eqn in jaxpr.eqns:
        outs = bind(eqn.primitive, *map(read, eqn.invars), **eqn.params)
        for v, out in zip(eqn.outvars, outs, strict=True):
            env[v] = out
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable[..., list[Any]]:
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


def concrete_or_error(x: Any, context: str) -> Any:
    """A concrete numpy value for `x`, raising ConcretizationTypeError for abstract tracers."""
    if isinstance(x, Tracer):
        return x._concrete_or_raise(context)
    return to_numpy(x) if not isinstance(x, _PYTHON_SCALARS) else x
