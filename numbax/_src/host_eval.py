"""Eager loop bodies evaluated at numpy's speed, with eager's bits.

An eager scan or while loop that runs uncompiled (too short to be worth compiling, or a while
loop's steps before its cut-off: eager_loops.py) evaluates its body at every step. Through
`core.eval_jaxpr` each equation went through bind, abstract evaluation and Array wrapping:
~33 us an equation on the 2-core VM, where the numpy call inside takes 1-3, so the 1024
eager equation-steps of a 20,000-step while loop took 35 ms a call (JAX's whole call: 0.4).

`evaluator(closed, keep_out)` gives a function of numpy operands that calls each equation's
implementation directly, with the operands and result dtypes `dispatch.apply_primitive`
gives it: literals as `to_numpy` makes them, bfloat16 widened by `host_operands`, results
cast to the equation's output dtypes. So a loop gives the same bits either way. A step runs
under one numpy error-state context, so elementwise equations use their impls without their
own (`elementwise.LOUD_IMPLS`). It is None where an equation needs apply_primitive itself:
the primitives in `keep_out` (loops, which eager_loops may compile), those the dispatcher
marks (`NEEDS_APPLY`: sharded layouts), extended dtypes; and while jax_debug_nans or
jax_debug_infs is on.
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
from numbax._src.lax.elementwise import LOUD_IMPLS, nextafter_p

NEEDS_APPLY: set[Primitive] = set()  # filled by dispatch.py: primitives only it runs right

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

    def run(*args: Any) -> list[np.ndarray]:
        with np.errstate(all="ignore"):  # (what each elementwise impl would set: LOUD_IMPLS)
            return steps(*args)

    def steps(*args: Any) -> list[np.ndarray]:
        env: dict[Any, np.ndarray] = dict(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, map(_host_value, args), strict=True))
        for primitive, impl, operands, params, widen, outs, out_dtypes in plan:
            values = [x.value if type(x) is _Operand else env[x] for x in operands]
            impl_params = params
            if widen:
                values, impl_params = host_operands(values, primitive, params)
            results = impl(*values, **impl_params)
            if len(results) != len(outs):
                raise ValueError(f"{primitive.name}: the implementation returned "
                                 f"{len(results)} outputs, its abstract evaluation "
                                 f"{len(outs)}.")
            for v, out, dtype in zip(outs, results, out_dtypes, strict=True):
                value = getattr(out, "_value", None)  # (a cond's impl gives Arrays)
                out = np.asarray(out if value is None else value)
                env[v] = out if out.dtype == dtype else out.astype(dtype)
        return [x.value if type(x) is _Operand else env[x] for x in outvars]

    return run


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
