"""Eager loop bodies evaluated at numpy's speed, with eager's bits.

An eager scan or while loop that runs uncompiled (too short to be worth compiling, or a while
loop's steps before its cut-off: eager_loops.py) evaluates its body at every step. Through
`core.eval_jaxpr` each equation went through bind, abstract evaluation and Array wrapping:
~33 us an equation on the 2-core VM, where the numpy call inside takes 1-3, so the 1024
eager equation-steps of a 20,000-step while loop took 35 ms a call (JAX's whole call: 0.4).

`evaluator(closed, keep_out)` gives a function of numpy operands that calls each equation's
implementation directly (generated straight-line Python, `_straight_line`), with the operands
and result dtypes `dispatch.apply_primitive` gives it: literals as `to_numpy` makes them,
bfloat16 widened by `host_operands`, results cast to the equation's output dtypes. So a loop
gives the same bits either way. A step runs under one numpy error-state context, so elementwise
equations use their impls without their own (`elementwise.LOUD_IMPLS`). It is None where an
equation needs apply_primitive itself: the primitives in `keep_out` (loops, which eager_loops
may compile), those the dispatcher marks (`NEEDS_APPLY`: sharded layouts), extended dtypes; and
while jax_debug_nans or jax_debug_infs is on.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.avals import literal_value
from numbax._src.config import config
from numbax._src.core import ClosedJaxpr, Literal, Primitive
from numbax._src.lax.convert import bitcast_convert_type_p
from numbax._src.lax.dot import dot_general_p
from numbax._src.lax.elementwise import LOUD_IMPLS, nextafter_p

NEEDS_APPLY: set[Primitive] = set()  # filled by dispatch.py: primitives only it runs right
# primitive -> runner(impl, args, params) for its eager calls: LAPACK's under the CPU runtime's
# thread rule (filled by compiler/cpu/backend.py, which holds the rule jitted calls follow)
EAGER_RUNNERS: dict[Primitive, Callable] = {}


def run_impl(primitive: Primitive, args: list, params: dict) -> list:
    """The primitive's eager implementation on numpy operands, through its runner if any."""
    runner = EAGER_RUNNERS.get(primitive)
    impl = core.impl_rules[primitive]
    return impl(*args, **params) if runner is None else runner(impl, args, params)

# their results depend on bfloat16's own bits or precision: numpy's (ml_dtypes') loops run them
_ON_BFLOAT16 = frozenset({bitcast_convert_type_p, nextafter_p})


def host_operands(args: list, primitive: Primitive, params: dict) -> tuple:
    """The impl's operands and params: bfloat16 operands and dtype params become float32, so
    every numpy implementation runs (numpy and scipy know no bfloat16) and computes as compiled
    code does; the caller rounds the results back to bfloat16. Bit casts and nextafter run on
    bfloat16 itself; control flow keeps its operands (its body's equations are rounded one by
    one)."""
    # (numpy gives bfloat16, like every ml_dtypes type, the kind "V": the common case first)
    if all(a.dtype.kind != "V" or a.dtype != dtypes.bfloat16 for a in args) and not any(
            _is_bfloat16(v) for v in params.values()):
        return args, params
    if primitive in _ON_BFLOAT16 or next(core.jaxprs_in_params(params), None) is not None:
        return args, params
    return ([a.astype(np.float32) if a.dtype == dtypes.bfloat16 else a for a in args],
            {k: np.dtype(np.float32) if _is_bfloat16(v) else v for k, v in params.items()})


def tile_product(primitive: Primitive, args: list, params: dict) -> list | None:
    """An eager product of bfloat16 arrays on AMX tiles, as jit runs it
    (compiler/cpu/runtime/gemm_amx.py; XLA's eager products use the tiles too), so eager and
    jitted calls give the same bits; None for any other call, which `host_operands` widens
    (numpy's float32 product, rounded)."""
    if primitive is not dot_general_p or not all(
            getattr(a, "dtype", None) == dtypes.bfloat16 for a in args):
        return None
    out_dtype = np.dtype(params["preferred_element_type"] or dtypes.bfloat16)
    if out_dtype not in (dtypes.bfloat16, np.dtype(np.float32)):
        return None
    from numbax._src.compiler.cpu.runtime import gemm_amx, library  # (the CPU runtime: lazily)

    x, y = args
    dims = params["dimension_numbers"]
    if not (gemm_amx.available() and gemm_amx.takes_product(x.shape, y.shape, dims)):
        return None
    return library.dot_general(x, y, dims, out_dtype)


def _is_bfloat16(param: Any) -> bool:
    return isinstance(param, np.dtype) and param == dtypes.bfloat16


def evaluator(closed: ClosedJaxpr, keep_out: Collection[Primitive]
              ) -> Callable[..., list[np.ndarray]] | None:
    """A function of numpy operands giving `closed`'s outputs as numpy arrays, equation by
    equation through their implementations; None where some equation must go through
    apply_primitive (see the module docstring) or a trace is active."""
    if config.jax_debug_nans or config.jax_debug_infs or core._state.dynamic_trace is not None:
        return None
    jaxpr = closed.jaxpr
    plan = []
    for eqn in jaxpr.eqns:
        primitive = eqn.primitive
        impl = LOUD_IMPLS.get(primitive) or core.impl_rules.get(primitive)
        avals = [x.aval for x in (*eqn.invars, *eqn.outvars)]
        if impl is None or primitive in keep_out or primitive in NEEDS_APPLY or \
                primitive not in core.abstract_eval_rules or \
                any(dtypes.is_extended_dtype(a.dtype) for a in avals):
            return None
        operands = [_Operand(core.to_numpy(literal_value(x.val, x.aval)))
                    if isinstance(x, Literal) else x for x in eqn.invars]
        # (the avals say whether any operand is bfloat16: host_operands only where one is)
        widen = any(a.dtype == dtypes.bfloat16 for a in avals) or \
            any(_is_bfloat16(v) for v in eqn.params.values())
        plan.append((primitive, impl, operands, eqn.params, widen, eqn.outvars,
                     [v.aval.dtype for v in eqn.outvars]))
    consts = [core.to_numpy(c) for c in closed.consts]
    outvars = [_Operand(core.to_numpy(literal_value(x.val, x.aval)))
               if isinstance(x, Literal) else x for x in jaxpr.outvars]
    return _Steps(jaxpr, consts, plan, outvars)


class _Steps:
    """The plan run step after step: interpreted (a loop over the plan, its values in a dict)
    for its first INTERPRETED_CALLS calls, then as straight-line code (`_straight_line`), ~3.5
    us an equation faster a step, once the interpreted steps have cost about what compiling the
    code costs (Python's compile() takes ~100 us an equation of a long body: a 4,500-equation
    body compiled at once made a 4-step scan 0.28 -> 1.44 s); at once where code of this wiring
    was compiled before and the body is short enough that writing its source is cheap. Both
    make the same calls, so the same bits."""

    def __init__(self, jaxpr, consts: list, plan: list, outvars: list) -> None:
        self.program = (jaxpr, consts, plan, outvars)
        self.calls = 0
        self.compiled = _straight_line(*self.program, compile_new=False) \
            if len(plan) <= SOURCE_AT_ONCE_EQNS else None

    def __call__(self, *args: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):  # (what each elementwise impl would set: LOUD_IMPLS)
            if self.compiled is None:
                self.calls += 1
                if self.calls <= INTERPRETED_CALLS:
                    return _interpret(*self.program, args)
                self.compiled = _straight_line(*self.program, compile_new=True)
            return self.compiled(*args)


INTERPRETED_CALLS = 32  # ~ compile()'s cost in interpreted steps
SOURCE_AT_ONCE_EQNS = 64  # bodies whose source is written up front to look for their code


def _interpret(jaxpr, consts: list, plan: list, outvars: list, args: tuple) -> list:
    env: dict[Any, np.ndarray] = dict(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, map(_host_value, args), strict=True))
    for primitive, impl, operands, params, widen, outs, out_dtypes in plan:
        values = [x.value if type(x) is _Operand else env[x] for x in operands]
        impl_params = params
        if widen:
            values, impl_params = host_operands(values, primitive, params)
        results = impl(*values, **impl_params)
        if len(results) != len(outs):
            _count_error(primitive, results, len(outs))
        for v, out, dtype in zip(outs, results, out_dtypes, strict=True):
            out = out if type(out) is np.ndarray else _as_host(out)
            env[v] = out if out.dtype == dtype else out.astype(dtype)
    return [x.value if type(x) is _Operand else env[x] for x in outvars]


def _straight_line(jaxpr, consts: list, plan: list, outvars: list, compile_new: bool
                   ) -> Callable[..., list] | None:
    """The plan as one Python function of straight-line calls, its values in locals (None
    where its code is not compiled yet and `compile_new` is false). The source depends only
    on the program's wiring, so its code is compiled once per wiring (`_FACTORIES`) and
    handed this program's impls, params, literals and dtypes."""
    names: dict[Any, str] = {}
    bound: list[Any] = []

    def bind(value: Any) -> str:
        bound.append(value)
        return f"b{len(bound) - 1}"

    def ref(x: Any) -> str:
        return bind(x.value) if type(x) is _Operand else names[x]

    for var, const in zip(jaxpr.constvars, consts, strict=True):
        names[var] = bind(const)
    args = [f"a{i}" for i in range(len(jaxpr.invars))]
    names.update(zip(jaxpr.invars, args, strict=True))
    lines = [f"    {a} = host_value({a})" for a in args]
    for k, (primitive, impl, operands, params, widen, outs, out_dtypes) in enumerate(plan):
        call = [ref(x) for x in operands]
        if widen:
            lines.append(f"    vals, ps = host_operands([{', '.join(call)}], {bind(primitive)}, "
                         f"{bind(params)})")
            call = ["*vals", "**ps"]
        elif params:
            call.append(f"**{bind(params)}")
        lines.append(f"    r = {bind(impl)}({', '.join(call)})")
        lines.append(f"    if len(r) != {len(outs)}: count_error({bind(primitive)}, r, "
                     f"{len(outs)})")
        for j, (var, dtype) in enumerate(zip(outs, out_dtypes, strict=True)):
            name = names[var] = f"t{k}_{j}"
            dt = bind(dtype)
            lines += [f"    {name} = r[{j}]",
                      f"    if type({name}) is not ndarray: {name} = as_host({name})",
                      f"    if {name}.dtype != {dt}: {name} = {name}.astype({dt})"]
    lines.append(f"    return [{', '.join(ref(x) for x in outvars)}]")
    source = (f"def make({', '.join(f'b{i}' for i in range(len(bound)))}):\n"
              f"  def steps({', '.join(args)}):\n" + "\n".join("  " + ln for ln in lines) +
              "\n  return steps\n")
    make = _FACTORIES.get(source)
    if make is None and not compile_new:
        return None
    if make is None:
        namespace = {"host_value": _host_value, "host_operands": host_operands,
                     "count_error": _count_error, "as_host": _as_host, "ndarray": np.ndarray}
        exec(compile(source, "<numbax eager loop step>", "exec"), namespace)  # noqa: S102
        if len(_FACTORIES) >= FACTORIES_SIZE:
            _FACTORIES.clear()
        make = _FACTORIES[source] = namespace["make"]
    return make(*bound)


_FACTORIES: dict[str, Callable] = {}  # generated source -> its compiled factory
FACTORIES_SIZE = 512


def _count_error(primitive: Primitive, results: list, expected: int) -> None:
    raise ValueError(f"{primitive.name}: the implementation returned {len(results)} outputs, "
                     f"its abstract evaluation {expected}.")


def _as_host(out: Any) -> np.ndarray:
    """An impl's result that is not a numpy array (a numpy scalar; a cond's Array)."""
    value = getattr(out, "_value", None)
    return np.asarray(out if value is None else value)


def _host_value(x: Any) -> np.ndarray:
    """x as apply_primitive hands it to an impl (a loop's carries are already such arrays)."""
    if type(x) is np.ndarray and dtypes.canonicalize_dtype(x.dtype) == x.dtype:
        return x
    return core.to_numpy(x)


class _Operand:
    """A literal's value, as apply_primitive would be handed it."""

    __slots__ = ("value",)

    def __init__(self, value: np.ndarray) -> None:
        self.value = value
