"""The estimates behind Lowered/Compiled.cost_analysis and Compiled.memory_analysis (jax.stages):
counted from a jaxpr with XLA's cost conventions, apart from the stage classes that report them."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Jaxpr, ShapedArray
from numbax._src.lax import dot, reductions, shape_ops
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import conditionals, loops

# One transcendental function per output element, as XLA's HloCostAnalysis counts them.
TRANSCENDENTAL = frozenset({
    ew.exp_p, ew.exp2_p, ew.log_p, ew.log1p_p, ew.expm1_p, ew.tanh_p, ew.logistic_p,
    ew.sin_p, ew.cos_p, ew.tan_p, ew.asin_p, ew.acos_p, ew.atan_p, ew.sinh_p, ew.cosh_p,
    ew.asinh_p, ew.acosh_p, ew.atanh_p, ew.sqrt_p, ew.rsqrt_p, ew.cbrt_p, ew.pow_p,
    ew.atan2_p, ew.erf_p, ew.erfc_p, ew.erf_inv_p, ew.lgamma_p, ew.digamma_p,
})
# One flop per output element: arithmetic, comparisons, selections, conversions, bit ops.
FLOP = frozenset({
    ew.add_p, ew.sub_p, ew.mul_p, ew.div_p, ew.rem_p, ew.max_p, ew.min_p, ew.neg_p, ew.abs_p,
    ew.sign_p, ew.floor_p, ew.ceil_p, ew.round_p, ew.square_p, ew.nextafter_p, ew.is_finite_p,
    ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.and_p, ew.or_p, ew.xor_p,
    ew.not_p, ew.shift_left_p, ew.shift_right_arithmetic_p, ew.shift_right_logical_p,
    ew.population_count_p, ew.select_n_p, ew.clamp_p, ew.convert_element_type_p, ew.real_p,
    ew.imag_p, ew.conj_p, ew.complex_p,
})
# Folds of the operand into the output: one flop per element folded away.
FOLD = frozenset({
    reductions.reduce_sum_p, reductions.reduce_prod_p, reductions.reduce_max_p,
    reductions.reduce_min_p, reductions.reduce_and_p, reductions.reduce_or_p,
    reductions.reduce_xor_p, reductions.argmax_p, reductions.argmin_p,
})
_LOGISTIC_FLOPS = 3  # 1 / (1 + exp(-x)): a negation, an addition and a division per element


def _size(aval: ShapedArray) -> int:
    return int(np.prod(aval.shape, dtype=np.int64))


def nbytes(aval: ShapedArray) -> int:
    """The bytes of a value of type `aval` (0 for float0 and other dtypes without storage)."""
    return _size(aval) * np.dtype(aval.dtype).itemsize


def _integer_pow_flops(y: int) -> int:
    """Multiplications of x**y by repeated squaring (one more for the reciprocal of y < 0)."""
    n = abs(int(y))
    if n <= 1:
        return int(y < 0)
    return n.bit_length() - 1 + bin(n).count("1") - 1 + int(y < 0)


def _eqn_cost(eqn: core.JaxprEqn) -> tuple[float, float]:
    """(flops, transcendentals) of one equation, its sub-jaxprs included."""
    prim = eqn.primitive
    out = eqn.outvars[0].aval if eqn.outvars else None
    if prim in TRANSCENDENTAL:
        flops = _LOGISTIC_FLOPS * _size(out) if prim is ew.logistic_p else 0
        return flops, _size(out)
    if prim in FLOP:
        return _size(out), 0
    if prim is ew.integer_pow_p:
        return _integer_pow_flops(eqn.params["y"]) * _size(out), 0
    if prim in FOLD:
        return _size(eqn.invars[0].aval) - _size(out), 0
    if prim is dot.dot_general_p:
        (lhs_contract, _), _ = eqn.params["dimension_numbers"]
        depth = int(np.prod([eqn.invars[0].aval.shape[d] for d in lhs_contract], dtype=np.int64))
        return 2 * _size(out) * depth, 0
    subs = [jaxpr_cost(j) for j in core.jaxprs_in_params(eqn.params)]
    if not subs:
        return 0, 0
    if prim is conditionals.cond_p:  # one branch runs: the dearest
        return max(s[0] for s in subs), max(s[1] for s in subs)
    times = eqn.params["length"] if prim is loops.scan_p else 1  # a while body: once, as XLA
    return times * sum(s[0] for s in subs), times * sum(s[1] for s in subs)


def jaxpr_cost(jaxpr: Jaxpr) -> tuple[float, float]:
    """(flops, transcendentals) of a jaxpr."""
    costs = [_eqn_cost(e) for e in jaxpr.eqns]
    return sum(c[0] for c in costs), sum(c[1] for c in costs)


# Equations that only rename memory: no bytes moved before fusion either (XLA's bitcasts).
_NO_TRAFFIC = frozenset({shape_ops.reshape_p, shape_ops.squeeze_p})


def cost_analysis(jaxpr: Jaxpr, fused: bool) -> dict[str, float]:
    """XLA's keys ('flops', 'transcendentals', 'bytes accessed'), zero entries left out.

    Bytes accessed: `fused`, the program's arguments and results (a fully fused program reads
    each input and writes each output once); otherwise every equation's operands and results,
    as XLA counts a program before fusion."""
    flops, transcendentals = jaxpr_cost(jaxpr)
    if fused:
        moved = sum(nbytes(a) for a in jaxpr.in_avals) + sum(nbytes(a) for a in jaxpr.out_avals)
    else:
        moved = sum(nbytes(v.aval) for e in jaxpr.eqns if e.primitive not in _NO_TRAFFIC
                    for v in [*e.invars, *e.outvars])
    out = {"flops": float(flops), "transcendentals": float(transcendentals),
           "bytes accessed": float(moved)}
    return {k: v for k, v in out.items() if v}


@dataclass(frozen=True)
class CompiledMemoryStats:
    """What `Compiled.memory_analysis()` returns: the fields of XLA's CompiledMemoryStats.

    generated_code_size_in_bytes is the size of the generated Python source; temporaries are
    the buffers the driver allocates between kernels, which numbax does not count (0)."""

    generated_code_size_in_bytes: int = 0
    argument_size_in_bytes: int = 0
    output_size_in_bytes: int = 0
    alias_size_in_bytes: int = 0
    temp_size_in_bytes: int = 0
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0

    def __str__(self) -> str:
        inner = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))
        return f"CompiledMemoryStats({inner})"


def memory_analysis(exe: Any) -> CompiledMemoryStats:
    """The memory an Executable's call uses: arguments, results, and the donated inputs its
    results may be written into (the aliased bytes)."""
    code = sum(len(s.encode()) for s in exe.sources)
    args = sum(nbytes(a) for a in exe.in_avals)
    outs = sum(nbytes(a) for a in exe.out_avals)
    alias = sum(nbytes(exe.in_avals[i]) for i in exe.donate if i is not None)
    return CompiledMemoryStats(generated_code_size_in_bytes=code, argument_size_in_bytes=args,
                               output_size_in_bytes=outs, alias_size_in_bytes=alias)
