"""Scalar helpers CPU kernels call as `sc.*`, each compiled once per signature (cached) and
inlined into kernels by LLVM (`forceinline`: LLVM's alwaysinline; spliced at Numba-IR level
before, they were typed and lowered again in every kernel): the helpers
shared with CUDA (compiler/scalar_helpers.py: cdiv, crem, ipow, round_away, round_even, sign,
float_to_int, float_to_uint, shift_left, shift_right_arithmetic, shift_right_logical, clz),
compiled here, and the CPU's own below — lax's NaN-propagating max/min/clamp, complex64's
abs, logistic, complex division and ordering, rounding to bfloat16's values, scaling by a
power of two, and the array forms of numpy's float -> integer casts and of the
float16/bfloat16 rounding (compiled control flow)."""
from __future__ import annotations

import math  # noqa: F401  (the shared helpers' globals)

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from numbax._src.compiler import scalar_helpers
from numbax._src.compiler.cpu.runtime import reductions as _rd

_JIT = {"error_model": "numpy", "cache": True, "forceinline": True}
scalar_helpers.compile_into(globals(), njit(**_JIT))


def fmax(a, b):
    """lax.max on float scalars: NaN if either is NaN, and +0.0 beats -0.0 (np.maximum keeps
    its second operand on a tie of zeros). Two floats of one type compile to LLVM's
    llvm.maximum (reductions.max_), which has these rules and no branch: loops over it
    vectorise, and scalar loops (a reduction over middle axes) have no branch to mispredict
    (a compare-and-select written with `or` took 3.5 ms for a 2 x 2 max pooling of a million
    random values, this 0.5). Other operand types take the select below."""
    return a if (a > b) | (a != a) | ((a == b) & np.signbit(b)) else b


def fmin(a, b):
    """lax.min on float scalars: NaN if either is NaN, and -0.0 beats +0.0 (as fmax, with
    llvm.minimum)."""
    return a if (a < b) | (a != a) | ((a == b) & np.signbit(a)) else b


def _extremum(ieee, select, larger: bool):
    def typer(a, b):
        if isinstance(a, types.Float) and a == b:
            return lambda a, b: ieee(a, b)
        if isinstance(a, (types.Integer, types.Boolean)) and a == b:
            # no NaN or signed zero. Not a conditional expression: its branch, inlined twice
            # into one kernel (two jnp.clip), made Numba warn of variables not in scope
            return (lambda a, b: max(a, b)) if larger else (lambda a, b: min(a, b))
        return select
    return typer


overload(fmax, inline="always")(_extremum(_rd.max_, fmax, larger=True))
overload(fmin, inline="always")(_extremum(_rd.min_, fmin, larger=False))


@njit(error_model="numpy", cache=True)
def maximum_array(a, b):
    """fmax over float arrays (compiled control flow's array form)."""
    return np.where((a > b) | (a != a) | ((a == b) & np.signbit(b)), a, b)


@njit(error_model="numpy", cache=True)
def minimum_array(a, b):
    """fmin over float arrays (compiled control flow's array form)."""
    return np.where((a < b) | (a != a) | ((a == b) & np.signbit(a)), a, b)


@njit(error_model="numpy", cache=True)
def array_max(x):
    """lax.reduce_max of a whole float array (compiled control flow's array form)."""
    acc = x.dtype.type(-np.inf)
    for v in x.flat:
        acc = fmax(acc, v)
    return acc


@njit(error_model="numpy", cache=True)
def array_min(x):
    """lax.reduce_min of a whole float array (compiled control flow's array form)."""
    acc = x.dtype.type(np.inf)
    for v in x.flat:
        acc = fmin(acc, v)
    return acc


@njit(**_JIT)
def clamp(lo, x, hi):
    return fmin(fmax(x, lo), hi)


@njit(**_JIT)
def abs_c64(z):
    """|z| of a complex64, as Numba's abs gives it (the float64 hypot rounded to float32) but
    vectorisable: float32 parts squared in float64 cannot overflow, and there is no libm call
    (abs then sum of a 256 x 2049 rfft: 1.45 -> 0.08 ms on the VM). An infinite part gives inf
    even beside a NaN, as hypot."""
    re, im = np.float64(z.real), np.float64(z.imag)
    r = np.float32(np.sqrt(re * re + im * im))
    return np.float32(np.inf) if (np.abs(re) == np.inf) | (np.abs(im) == np.inf) else r


@njit(**_JIT)
def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _one_like(x):
    """1 in x's float type (a float64 1.0 would widen float32 arithmetic)."""


@overload(_one_like, inline="always")
def _one_like_impl(x):
    if x == types.float32:
        return lambda x: np.float32(1)
    return lambda x: 1.0


@njit(**_JIT)
def complex_div(a, b):
    """numpy's complex division (Smith's: the divisor's larger part divides first), so the
    compiled quotient is the eager one: Numba's raises ZeroDivisionError for a zero divisor
    (numpy gives (a.real / 0, a.imag / 0), inf/nan parts) and gives nan for 1 / (inf + 0j)
    (numpy: 0)."""
    br, bi = b.real, b.imag
    if abs(br) >= abs(bi):
        if br == 0 and bi == 0:
            z = abs(br)
            return type(a)(complex(a.real / z, a.imag / z))
        ratio = bi / br
        scale = _one_like(br) / (br + bi * ratio)  # in the parts' float type, as numpy
        return type(a)(complex((a.real + a.imag * ratio) * scale,
                               (a.imag - a.real * ratio) * scale))
    ratio = br / bi
    scale = _one_like(br) / (bi + br * ratio)
    return type(a)(complex((a.real * ratio + a.imag) * scale, (a.imag * ratio - a.real) * scale))


@njit(**_JIT)
def complex_lt(a, b):
    """numpy's ordering of complex numbers: lexicographic on (real, imag); NaNs compare
    False."""
    return a.real < b.real or (a.real == b.real and a.imag < b.imag)


@njit(**_JIT)
def complex_le(a, b):
    return a.real < b.real or (a.real == b.real and a.imag <= b.imag)


@njit(error_model="numpy", cache=True)
def float_array_to_int(x, lo, hi, unsigned):
    """float_to_int/float_to_uint over a whole array (compiled control flow's astype), as
    int64 values of the same shape (uint64: its bits); the caller's astype keeps them."""
    flat = x.ravel()
    out = np.empty(flat.size, np.int64)
    for i in range(flat.size):  # the shared helpers, compiled into this module's globals
        if unsigned:
            out[i] = float_to_uint(flat[i])  # noqa: F821
        else:
            out[i] = float_to_int(flat[i], lo, hi)  # noqa: F821
    return out.reshape(x.shape)


def over_arrays(scalar):
    """`scalar` (an inlined helper) applied to each element of an array of any layout, into
    a new C array of the same dtype: the array form compiled control flow calls for a
    function that has only a scalar form (its nests inline the scalar form, so this runs
    only where an equation stays outside them). Not in Numba's disk cache: a closure's entry
    is keyed by its pickled cells, and a dispatcher pickles differently in every process, so
    each run missed and added an entry to the index."""
    @njit(error_model="numpy")
    def apply(x):  # pragma: no cover - compiled
        flat = x.ravel()
        out = np.empty(flat.size, x.dtype)
        for i in range(flat.size):
            out[i] = scalar(flat[i])
        return out.reshape(x.shape)
    return apply


@njit(**_JIT)
def lgamma(x):
    return math.lgamma(x)


@njit(**_JIT)
def erfc(x):
    return math.erfc(x)


# the array forms of compiled control flow (the nests inline the scalar forms)
round_away_array, lgamma_array = over_arrays(round_away), over_arrays(lgamma)  # noqa: F821
erfc_array = over_arrays(erfc)


@njit(error_model="numpy", cache=True)
def threefry_words(k1, k2, x0, x1):
    """threefry_word of operands broadcast together (compiled control flow's array form; the
    nests inline the scalar form)."""
    ka, kb, xa, xb = np.broadcast_arrays(np.asarray(k1), np.asarray(k2), np.asarray(x0),
                                         np.asarray(x1))
    out = np.empty(ka.shape, np.uint64)
    flat, ka, kb, xa, xb = out.ravel(), ka.ravel(), kb.ravel(), xa.ravel(), xb.ravel()
    for i in range(flat.size):
        flat[i] = threefry_word(ka[i], kb[i], xa[i], xb[i])  # noqa: F821
    return out


@njit(error_model="numpy", cache=True)
def round_to_float16_array(x):
    """round_to_float16 over a whole array (compiled control flow), in x's dtype."""
    flat = x.ravel()
    out = np.empty(flat.size, x.dtype)
    for i in range(flat.size):
        out[i] = round_to_float16(flat[i])  # noqa: F821 (a shared helper, compiled above)
    return out.reshape(x.shape)


@intrinsic
def _bfloat16_rounded(typingctx, x):
    """float32 x rounded to bfloat16's 8 significant bits, ties to even (bfloat16 is the upper
    half of a float32: add half the dropped half plus the kept last bit, clear the lower half;
    what rounds past the largest value carries into the exponent and becomes inf). NaN becomes
    the quiet NaN of its sign, as ml_dtypes' cast makes it, so the upper half of any result is
    its bfloat16. Integer work on the bits: it vectorises, where frexp/ldexp would not."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        bits = builder.bitcast(args[0], i32)
        last_kept = builder.and_(builder.lshr(bits, ir.Constant(i32, 16)), ir.Constant(i32, 1))
        rounded = builder.add(bits, builder.add(last_kept, ir.Constant(i32, 0x7FFF)))
        value = builder.bitcast(builder.and_(rounded, ir.Constant(i32, 0xFFFF0000)),
                                ir.FloatType())
        quiet_nan = builder.bitcast(builder.or_(builder.and_(bits, ir.Constant(i32, 0x80000000)),
                                                ir.Constant(i32, 0x7FC00000)), ir.FloatType())
        is_nan = builder.fcmp_unordered("uno", args[0], args[0])
        return builder.select(is_nan, quiet_nan, value)

    return types.float32(types.float32), codegen


@njit(**_JIT)
def round_to_bfloat16(x):
    """x (float32) rounded to the nearest bfloat16 value, as ml_dtypes' cast rounds it."""
    return _bfloat16_rounded(np.float32(x))


@njit(error_model="numpy", cache=True)
def round_to_bfloat16_array(x):
    """round_to_bfloat16 over a whole float32 array (compiled control flow)."""
    flat = x.ravel()
    out = np.empty(flat.size, x.dtype)
    for i in range(flat.size):
        out[i] = _bfloat16_rounded(flat[i])
    return out.reshape(x.shape)


@intrinsic
def ldexp(typingctx, x, k):
    """x * 2**k rounded once (subnormal results too), through LLVM's ldexp: one vscalefps/pd
    per vector on AVX-512 hosts; elsewhere LLVM calls libm's ldexp per element, so
    fastmath.py uses it only where the target has AVX-512 (`fastmath.SCALEF`)."""
    if x not in (types.float32, types.float64) or not isinstance(k, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value, exponent = args
        i32 = ir.IntType(32)
        if exponent.type.width > 32:
            exponent = builder.trunc(exponent, i32)
        elif exponent.type.width < 32:
            exponent = builder.sext(exponent, i32)
        fn = builder.module.declare_intrinsic(
            "llvm.ldexp", [value.type, i32], ir.FunctionType(value.type, [value.type, i32]))
        return builder.call(fn, [value, exponent])

    return x(x, k), codegen


@intrinsic
def opaque(typingctx, n):
    """`n` (an int64) through an empty inline-assembly statement, a value LLVM cannot fold:
    a loop bounded by it is vectorised instead of unrolled (flow_runs.loop_bound)."""
    if n != types.int64 and not isinstance(n, types.IntegerLiteral):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        barrier = ir.InlineAsm(ir.FunctionType(i64, [i64]), "", "=r,0")
        return builder.call(barrier, [value])

    return types.int64(n), codegen
