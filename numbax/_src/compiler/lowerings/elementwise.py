"""Lowerings of the elementwise primitives (lax/elementwise.py, add_any, stop_gradient).

Each primitive's scalar form inside fused loop nests is written once against Numba's CPU
target (numpy functions, `sc.*` helpers); the CPU overrides it with its vectorised fast math
(`fm.*`), CUDA with libdevice's `math.*` and, for complex operands, the device helpers of
cuda/runtime/complex.py. The array form is what compiled control flow on the CPU runs."""
from __future__ import annotations

import numpy as np

from numbax._src import dtypes
from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.lowerings.forms import (
    FLOAT_KINDS,
    Unsupported,
    array_call,
    array_infix,
    bitcast,
    by_float_width,
    by_kind,
    call,
    complex_or,
    const,
    convert,
    float_max,
    float_min,
    infix,
    integer_pow,
    involves_complex,
    no_complex,
    operand_dtype,
    prefix,
    select_n,
    shift,
    template,
)
from numbax._src.compiler.registry import (
    EAGER,
    EqnPredicate,
    Fusion,
    ScalarRule,
    lowering,
    register,
)
from numbax._src.compiler.source import dtype_ctor, render_scalar
from numbax._src.core import JaxprEqn, Primitive
from numbax._src.custom_derivatives import stop_gradient_p
from numbax._src.interpreters.ad import add_any_p
from numbax._src.lax import bits as lbits
from numbax._src.lax import convert as lconv
from numbax._src.lax import elementwise as lx


def elementwise(prim: Primitive, scalar: ScalarRule | None, array: ScalarRule | None = None, *,
                ok: EqnPredicate | None = None, cast: bool = True, cpu: ScalarRule | None = None,
                cuda: ScalarRule | None = None, cuda_complex: ScalarRule | None = None) -> None:
    """Registers an elementwise primitive: its neutral scalar form (`ok`: the equations it
    covers), the array form for compiled control flow (CPU), and per-backend scalar forms.
    CUDA fuses an equation with complex operands only through `cuda_complex`."""
    register(prim, Fusion.ELEMENTWISE, scalar=scalar, scalar_ok=ok, cast=cast)
    if array is not None:
        register(prim, backend="cpu", array=array)
    if cpu is not None:
        register(prim, backend="cpu", scalar=cpu)
    real = cuda or scalar
    if cuda_complex is None:
        cuda_ok = (lambda e: not involves_complex(e) and (ok is None or ok(e)))
        cuda_rule = real
    else:
        cuda_ok = (lambda e: involves_complex(e) or ok is None or ok(e))
        cuda_rule = complex_or(real, cuda_complex) if real is not None else cuda_complex
    register(prim, backend="cuda", scalar=cuda_rule, scalar_ok=cuda_ok)


_WIDTHS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}  # fast math's suffixes


def _fastmath(name: str, other: ScalarRule | None,
              widths: tuple = (np.float32, np.float64), module: str = "fm") -> ScalarRule:
    """The CPU's vectorisable `fm.<name>_f32/_f64` (`fe.` for the error functions) for
    `widths`, `other` otherwise."""
    def rule(args, eqn):
        dtype = operand_dtype(eqn)
        if dtype in widths:
            return f"{module}.{name}_{_WIDTHS[dtype]}({args[0]})"
        return other(args, eqn)

    return rule


def _math(fn: str) -> ScalarRule:
    return call(f"math.{fn}")


def _c(fn: str) -> ScalarRule:
    """A complex device helper of CUDA (cuda/runtime/complex.py, reached as sc.c_<fn>)."""
    return call(f"sc.c_{fn}")


def _one_over(inner: ScalarRule) -> ScalarRule:
    return lambda args, eqn: f"({render_scalar(1, operand_dtype(eqn))} / {inner(args, eqn)})"


def _floats_only(eqn: JaxprEqn) -> bool:
    return no_complex(eqn)


# ----------------------------------------------------------------------------- arithmetic

_ADD = by_kind(infix("+"), infix("+"), infix("|"))
elementwise(lx.add_p, _ADD, array_infix("+", "|"), cuda_complex=infix("+"))
elementwise(add_any_p, _ADD, array_infix("+", "|"), cuda_complex=infix("+"))
elementwise(lx.sub_p, infix("-"), array_infix("-"), cuda_complex=infix("-"))
elementwise(lx.mul_p, by_kind(infix("*"), infix("*"), infix("&")), array_infix("*", "&"),
            cuda_complex=infix("*"))


def _array_div(args, eqn):
    if operand_dtype(eqn).kind not in FLOAT_KINDS:
        raise Unsupported("div")
    return f"({args[0]} / {args[1]})"


def _int_helper(signed: str, unsigned: str) -> ScalarRule:
    """An integer division helper of scalar_helpers (XLA's results for a zero divisor), the
    unsigned one for unsigned operands."""
    return lambda args, eqn: call(unsigned if operand_dtype(eqn).kind == "u" else signed)(
        args, eqn)


_IDIV, _IREM = _int_helper("sc.cdiv", "sc.udiv"), _int_helper("sc.crem", "sc.urem")
elementwise(lx.div_p, by_kind(complex_or(infix("/"), template("sc.complex_div({0}, {1})")),
                              _IDIV), _array_div,
            cuda=by_kind(infix("/"), _IDIV), cuda_complex=_c("div"))
elementwise(lx.rem_p, by_kind(call("np.fmod"), _IREM), array_call("np.fmod"),
            ok=no_complex, cuda=by_kind(_math("fmod"), _IREM))


def _pow_cpu(args, eqn):
    """float32: the CPU's vectorisable fm.pow_f32 (computed in float64, ≤ 1 ulp); numpy's
    scalar power otherwise (float64 needs more than exp(y log x) in float64 keeps)."""
    if operand_dtype(eqn) == np.float32:
        return f"fm.pow_f32({args[0]}, {args[1]})"
    return f"np.power({args[0]}, {args[1]})"


elementwise(lx.pow_p, call("np.power"), array_call("np.power"), cpu=_pow_cpu,
            cuda=by_kind(_math("pow"), infix("**")), cuda_complex=_c("pow"))
register(lx.pow_p, backend="cpu", heavy=True)


def _extremum_array(ufunc: str, larger: bool) -> ScalarRule:
    """Compiled control flow's max/min: np.maximum/np.minimum, except for floats, whose ties
    of zeros and NaNs follow lax.max/min (sc.maximum_array/minimum_array)."""
    def rule(args, eqn):
        kind = operand_dtype(eqn).kind
        if kind not in "fiu":
            raise Unsupported(eqn.primitive.name)
        if kind == "f":
            return f"sc.{'maximum' if larger else 'minimum'}_array({args[0]}, {args[1]})"
        return f"{ufunc}({args[0]}, {args[1]})"

    return rule


elementwise(lx.max_p, by_kind(call("sc.fmax"), call("max")), _extremum_array("np.maximum", True),
            ok=no_complex, cuda=by_kind(lambda a, e: float_max(*a), call("max")))
elementwise(lx.min_p, by_kind(call("sc.fmin"), call("min")), _extremum_array("np.minimum", False),
            ok=no_complex, cuda=by_kind(lambda a, e: float_min(*a), call("min")))
elementwise(lx.atan2_p, call("np.arctan2"), array_call("np.arctan2"), cuda=_math("atan2"),
            cpu=lambda a, e: f"tg.atan2_{_WIDTHS[operand_dtype(e)]}({a[0]}, {a[1]})"
            if operand_dtype(e) in _WIDTHS else f"np.arctan2({a[0]}, {a[1]})")
register(lx.atan2_p, backend="cpu", heavy=True)


def _integer_pow_array(args, eqn):
    y = eqn.params["y"]
    if 1 <= y <= 4:
        return "(" + " * ".join([args[0]] * y) + ")"
    return f"np.power({args[0]}, {const(eqn, y)})"


# a complex reciprocal through numpy's division: Numba's raises ZeroDivisionError for 0j
elementwise(lx.integer_pow_p, complex_or(integer_pow("sc.ipow"),
                                         integer_pow("sc.ipow", div="sc.complex_div")),
            _integer_pow_array, cuda_complex=integer_pow("sc.ipow", div="sc.c_div"))
elementwise(lx.square_p, template("({0} * {0})"), template("({0} * {0})"),
            cuda_complex=template("({0} * {0})"))
elementwise(lx.neg_p, prefix("-"), prefix("-"), cuda_complex=prefix("-"))


def _sign_array(args, eqn):
    if involves_complex(eqn):  # Numba's complex sign differs from z / |z| at infinities
        raise Unsupported("sign")
    return f"np.where({args[0]} == 0, {args[0]} - {args[0]}, np.sign({args[0]}))"


elementwise(lx.sign_p, call("sc.sign"),  # numpy's +0.0 for -0.0 (Numba's np.sign keeps -0.0)
            _sign_array,
            ok=no_complex, cuda_complex=_c("sign"))
elementwise(lx.abs_p, call("abs"), array_call("np.abs", "fciu"), cuda_complex=call("abs"),
            cpu=lambda a, e: (f"sc.abs_c64({a[0]})" if operand_dtype(e) == np.complex64
                              else f"abs({a[0]})"))

# ----------------------------------------------------------------------------- bits and logic

elementwise(lx.and_p, infix("&"), array_infix("&", "&"))
elementwise(lx.or_p, infix("|"), array_infix("|", "|"))
elementwise(lx.xor_p, infix("^"), array_infix("^", "^"))


def _not_array(args, eqn):
    if operand_dtype(eqn) == np.bool_:
        return f"np.logical_not({args[0]})"
    return f"(~{args[0]})"


elementwise(lx.not_p, by_kind(None, prefix("~"), template("(not {0})")), _not_array)
# A literal amount in range is the plain operator: the helpers' range test, inlined at
# Numba-IR level once per shift, made a loop body of four threefry hashes (a random key split,
# normal and uniform draws in a scan) take 9.6 s to compile.
elementwise(lx.shift_left_p, shift("left", literal_ok=True))
elementwise(lx.shift_right_arithmetic_p, shift("arithmetic", literal_ok=True))
elementwise(lx.shift_right_logical_p, shift("logical", literal_ok=True))
elementwise(lx.population_count_p, None, cuda=call("sc.popcount"))

# ----------------------------------------------------------------------------- comparisons

for _prim, _op in ((lx.eq_p, "=="), (lx.ne_p, "!=")):
    elementwise(_prim, infix(_op), array_infix(_op, _op), cast=False, cuda_complex=infix(_op))
for _prim, _op, _complex in ((lx.lt_p, "<", "sc.complex_lt({0}, {1})"),
                             (lx.le_p, "<=", "sc.complex_le({0}, {1})"),
                             (lx.gt_p, ">", "sc.complex_lt({1}, {0})"),
                             (lx.ge_p, ">=", "sc.complex_le({1}, {0})")):
    elementwise(_prim, complex_or(infix(_op), template(_complex)), array_infix(_op), cast=False,
                cuda=infix(_op))
elementwise(lx.is_finite_p, call("np.isfinite"), array_call("np.isfinite"), cast=False,
            cuda=_math("isfinite"), cuda_complex=_c("isfinite"))

# ----------------------------------------------------------------------------- transcendental

# float32 trigonometric and hyperbolic functions: the CPU's vectorised ones
# (cpu/runtime/fastmath_trig.py)
for _prim, _name, _np in ((lx.sin_p, "sin", "np.sin"), (lx.cos_p, "cos", "np.cos"),
                          (lx.tan_p, "tan", "np.tan"), (lx.asin_p, "asin", "np.arcsin"),
                          (lx.acos_p, "acos", "np.arccos"), (lx.atan_p, "atan", "np.arctan"),
                          (lx.sinh_p, "sinh", "np.sinh"), (lx.cosh_p, "cosh", "np.cosh")):
    widths = (np.float32, np.float64) if _name == "atan" else (np.float32,)
    elementwise(_prim, call(_np), array_call(_np),
                cpu=_fastmath(_name, call(_np), widths=widths, module="tg"),
                cuda=_math(_name), cuda_complex=_c(_name))
    register(_prim, backend="cpu", heavy=True)
for _prim, _np, _cmath in ((lx.asinh_p, "np.arcsinh", "asinh"),
                           (lx.acosh_p, "np.arccosh", "acosh"),
                           (lx.atanh_p, "np.arctanh", "atanh"), (lx.sqrt_p, "np.sqrt", "sqrt")):
    elementwise(_prim, call(_np), array_call(_np), cuda=_math(_cmath), cuda_complex=_c(_cmath))
# the CPU's vectorised fast math (cpu/runtime/fastmath.py) for float32/float64
for _prim, _name in ((lx.exp_p, "exp"), (lx.log_p, "log"), (lx.log1p_p, "log1p"),
                     (lx.expm1_p, "expm1"), (lx.tanh_p, "tanh")):
    elementwise(_prim, call(f"np.{_name}"), array_call(f"np.{_name}"),
                cpu=_fastmath(_name, call(f"np.{_name}")), cuda=_math(_name),
                cuda_complex=_c(_name))
    register(_prim, backend="cpu", heavy=True)
elementwise(lx.exp2_p, call("np.exp2"), array_call("np.exp2"),
            cuda=lambda a, e: f"math.pow({render_scalar(2, operand_dtype(e))}, {a[0]})",
            cuda_complex=_c("exp2"))



def _logistic_array(args, eqn):
    return f"({const(eqn, 1)} / ({const(eqn, 1)} + np.exp(-{args[0]})))"


def _logistic_cuda(args, eqn):
    one = render_scalar(1, operand_dtype(eqn))
    return f"({one} / ({one} + math.exp(-{args[0]})))"


elementwise(lx.logistic_p, call("sc.logistic"), _logistic_array, ok=_floats_only,
            cpu=_fastmath("logistic", call("sc.logistic")),
            cuda=by_float_width(call("sc.logistic_f32"), _logistic_cuda))


def _array_by_width(f32: str, f64: str) -> ScalarRule:
    """The array form `f32(x)` or `f64(x)` (runtime helpers made by sc.over_arrays) for
    float32 and float64 operands. Without an array form an equation cannot join compiled
    control flow's nests, and its loop ran from the host: random.normal's erf_inv kept a
    Metropolis scan there (40 ms for 500 steps of 1024 chains, jax.jit 19)."""
    def rule(args, eqn):
        dtype = operand_dtype(eqn)
        if dtype not in (np.float32, np.float64):
            raise Unsupported(eqn.primitive.name)
        return f"{f32 if dtype == np.float32 else f64}({args[0]})"
    return rule


elementwise(lx.erf_p, call("math.erf"), _array_by_width("fe.erf_f32_array", "fe.erf_f64_array"),
            ok=_floats_only, cpu=_fastmath("erf", call("math.erf"), module="fe"))
elementwise(lx.erfc_p, call("math.erfc"),
            _array_by_width("fe.erfc_f32_array", "sc.erfc_array"), ok=_floats_only,
            cpu=_fastmath("erfc", call("math.erfc"), widths=(np.float32,), module="fe"))
elementwise(lx.lgamma_p, call("math.lgamma"),
            _array_by_width("sc.lgamma_array", "sc.lgamma_array"), ok=_floats_only)
# erf_inv: the CPU's fast math only (float16 runs scipy's through the eager impl); CUDA's own
elementwise(lx.erf_inv_p, None, ok=_floats_only,
            cuda=by_float_width(call("sc.erfinv_f32"), template("sc.erfinv(np.float64({0}))")))
# float32: XLA's algorithm step for step (cpu/runtime/xla_erf_inv.py), the eager impl's bits
register(lx.erf_inv_p, backend="cpu",
         scalar=by_float_width(call("xe.erf_inv_f32"), call("fe.erf_inv_f64")),
         array=_array_by_width("xe.erf_inv_f32_array", "fe.erf_inv_f64_array"),
         scalar_ok=lambda e: operand_dtype(e) in (np.float32, np.float64))
for _prim in (lx.logistic_p, lx.erf_p, lx.erfc_p, lx.erf_inv_p):
    register(_prim, backend="cpu", heavy=True)
elementwise(lx.rsqrt_p, _one_over(call("np.sqrt")),
            lambda a, e: f"({const(e, 1)} / np.sqrt({a[0]}))", cuda=_one_over(_math("sqrt")),
            cuda_complex=lambda a, e: f"sc.c_div({const(e, 1)}, sc.c_sqrt({a[0]}))")
elementwise(lx.cbrt_p, call("np.cbrt"), array_call("np.cbrt"), cuda=call("cuda.cbrt"))
# special functions: CUDA's device versions; the CPU runs scipy through the eager impl
elementwise(lx.digamma_p, None, cuda=template("sc.digamma(np.float64({0}))"))
elementwise(lx.polygamma_p, None,
            cuda=template("sc.polygamma(np.float64({0}), np.float64({1}))"))
elementwise(lx.nextafter_p, None,
            cuda=by_float_width(call("sc.nextafter32"), call("sc.nextafter64")))

# ----------------------------------------------------------------------------- rounding


def _round(even: str, away: str = "sc.round_away") -> ScalarRule:
    return lambda args, eqn: (f"{even}({args[0]})" if eqn.params.get("rounding_method", 0) == 1
                              else f"{away}({args[0]})")




def _signed_cuda(fn: str) -> ScalarRule:
    """math.floor/ceil keeping the operand's sign on a zero result (ceil(-0.5) is -0.0; the
    CUDA simulator's math.* returns a Python int, found by the fuzzer's CUDA slice)."""
    return lambda a, e: f"math.copysign(math.{fn}({a[0]}), {a[0]})"


elementwise(lx.floor_p, call("np.floor"), array_call("np.floor"), cuda=_signed_cuda("floor"))
elementwise(lx.ceil_p, call("np.ceil"), array_call("np.ceil"), cuda=_signed_cuda("ceil"))
elementwise(lx.round_p, _round("np.rint"), _round("np.rint", "sc.round_away_array"),
            cuda=_round("sc.round_even"))

# ----------------------------------------------------------------------------- complex parts

elementwise(lx.real_p, template("{0}.real"), template("{0}.real"),
            cuda_complex=template("{0}.real"))
elementwise(lx.imag_p, template("{0}.imag"), template("{0}.imag"),
            cuda_complex=template("{0}.imag"))
elementwise(lx.conj_p, call("np.conj"), call("np.conj"), cuda=template("{0}"),
            cuda_complex=lambda a, e: (f"{a[0]}.conjugate()"
                                       if operand_dtype(e).kind == "c" else a[0]))
elementwise(lx.complex_p, None, cuda_complex=template("complex({0}, {1})"))

# ----------------------------------------------------------------------------- selection


def _full(eqn: JaxprEqn, x: str) -> str:
    return f"np.full({eqn.outvars[0].aval.shape}, {x})"


def _select_n_array(args, eqn):
    shape = eqn.outvars[0].aval.shape
    which = args[0] if eqn.invars[0].aval.ndim else _full(eqn, args[0])
    cases = [c if x.aval.ndim else f"np.full({shape}, {c})"
             for c, x in zip(args[1:], eqn.invars[1:], strict=True)]
    if len(cases) == 1:
        return cases[0]
    if operand_dtype(eqn) == np.bool_:
        return f"np.where({which}, {cases[1]}, {cases[0]})"
    expr = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        expr = f"np.where({which} <= {k}, {cases[k]}, {expr})"
    return expr


elementwise(lx.select_n_p, select_n, _select_n_array, cuda_complex=select_n)


def _clamp_cuda(args, eqn):
    lo, x, hi = args
    if operand_dtype(eqn, 1).kind in "iub":
        return f"min(max({x}, {lo}), {hi})"
    return float_min(float_max(x, lo), hi)


def _clamp_array(args, eqn):
    lo, x, hi = args
    if operand_dtype(eqn, 1).kind == "f":
        return f"sc.minimum_array(sc.maximum_array({x}, {lo}), {hi})"
    return f"np.minimum(np.maximum({x}, {lo}), {hi})"


elementwise(lx.clamp_p, call("sc.clamp"), _clamp_array,
            ok=no_complex, cuda=_clamp_cuda)

# ----------------------------------------------------------------------------- conversions


def _convert_array(args, eqn):
    src, dst = operand_dtype(eqn), np.dtype(eqn.params["new_dtype"])
    if dst == np.bool_:
        return f"({args[0]} != 0)"
    if src.kind in "fc" and dst.kind in "iu":
        x = f"{args[0]}.real" if src.kind == "c" else args[0]
        info = np.iinfo(dst)
        return (f"sc.float_array_to_int({x}, {int(info.min)}, {int(info.max)}, "
                f"{dst == np.uint64}).astype({dtype_ctor(dst)})")
    return f"{args[0]}.astype({dtype_ctor(dst)})"


elementwise(lx.convert_element_type_p, convert, _convert_array, cuda_complex=convert)
elementwise(lconv.round_to_float16_p, call("sc.round_to_float16"),
            call("sc.round_to_float16_array"))  # the CPU's float16 programs (narrow_floats.py)
# bfloat16 programs (narrow_floats.py): computed in float32, rounded by each runtime's helper
register(lconv.round_to_bfloat16_p, Fusion.ELEMENTWISE, scalar=call("sc.round_to_bfloat16"))
register(lconv.round_to_bfloat16_p, backend="cpu", array=call("sc.round_to_bfloat16_array"))


def _same_width_numbers(eqn: JaxprEqn) -> bool:
    src, dst = operand_dtype(eqn), np.dtype(eqn.params["new_dtype"])
    return src.itemsize == dst.itemsize and src.kind in "iuf" and dst.kind in "iuf"


def _bitcast_view(eqn: JaxprEqn, ins: list[str]) -> str:
    """The driver's form: a same-width bitcast of a whole array is a numpy view."""
    return f"[{ins[0]}.view(np.dtype({np.dtype(eqn.params['new_dtype']).name!r}))]"


elementwise(lx.bitcast_convert_type_p, bitcast, ok=_same_width_numbers)
register(lx.bitcast_convert_type_p, backend="cpu", library=_bitcast_view,
         library_ok=_same_width_numbers)
# CUDA holds bfloat16 as uint16: narrow_floats' views between the two are the buffer itself
register(lx.bitcast_convert_type_p, backend="cuda", library=cuda_driver.CudaDriver.bitcast,
         library_ok=lambda e: dtypes.bfloat16 in (operand_dtype(e),
                                                  np.dtype(e.params["new_dtype"])))
elementwise(stop_gradient_p, template("{0}"), template("{0}"), cuda_complex=template("{0}"))

# ----------------------------------------------------------------------------- bits (lax/bits.py)

elementwise(lbits.clz_p,
            lambda a, e: f"sc.clz({a[0]}, {operand_dtype(e).itemsize * 8})")
# 128-bit products, precision rounding and total-order comparisons: numpy in the driver
for _prim in (lbits.mulhi_p, lbits.reduce_precision_p, lbits.eq_to_p, lbits.le_to_p,
              lbits.lt_to_p):
    register(_prim, backend="cpu", library=EAGER)


def _real_array(rule: ScalarRule) -> ScalarRule:
    def real_only(args, eqn):
        if involves_complex(eqn):
            raise Unsupported(eqn.primitive.name)
        return rule(args, eqn)

    return real_only


# Numba's cmath differs from numpy's C99 rules where a part is infinite or nan (exp(710+0j) is
# inf+nanj, tanh(1j*inf) nan+nanj), overflows or underflows inside (log of 1e308+1e308j is
# inf, expm1(1e-20) 0, sqrt(5e-324j) raises ZeroDivisionError; found by the fuzzer): complex
# operands run numpy (the eager impl) between the CPU's kernels
for _prim in (lx.sin_p, lx.cos_p, lx.tan_p, lx.asin_p, lx.acos_p, lx.atan_p, lx.sinh_p,
              lx.cosh_p, lx.asinh_p, lx.acosh_p, lx.atanh_p, lx.exp_p, lx.exp2_p, lx.tanh_p,
              lx.log_p, lx.log1p_p, lx.expm1_p, lx.sqrt_p, lx.rsqrt_p, lx.pow_p, lx.square_p):
    register(_prim, backend="cpu", scalar_ok=no_complex,
             array=_real_array(lowering(_prim, "cpu").array))


# A few instructions an element on every backend: a later kernel recomputes them instead of
# reading their stored results (remat.rematerialize). Division, transcendental functions and
# rounding helpers are not: recomputing costs more than the bytes it saves.
for _prim in (lx.add_p, add_any_p, lx.sub_p, lx.mul_p, lx.neg_p, lx.square_p, lx.abs_p,
              lx.max_p, lx.min_p, lx.select_n_p, lx.convert_element_type_p,
              lx.bitcast_convert_type_p, lx.shift_left_p, lx.shift_right_logical_p,
              lx.shift_right_arithmetic_p, lx.and_p, lx.or_p, lx.xor_p, lx.not_p, lx.eq_p,
              lx.ne_p, lx.lt_p, lx.le_p, lx.gt_p, lx.ge_p, stop_gradient_p):
    register(_prim, cheap=True)
