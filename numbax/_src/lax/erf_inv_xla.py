"""erf_inv's eager impl: float32 step for step as XLA:CPU computes it, so samplers match JAX.

JAX lowers `erf_inv` to CHLO's float32 algorithm (Giles' single-precision approximation):
w = -log1p(-x*x); a degree-8 polynomial in w - 2.5 (w < 5) or sqrt(w) - 3 (w >= 5); times x;
+-inf at x = +-1. XLA:CPU then computes log1p with its own float32 code (a Cephes rational for
|t| < sqrt(2) - 1, otherwise log(1 + t) by a frexp split and a polynomial) and LLVM contracts
each multiply whose product has a single use into the following add (one rounding: an FMA).
Every step below is that code (read off XLA's optimized IR and its x86 object code, JAX 0.10.2),
in numpy on float32 arrays, with `fma32` a correctly rounded float32 fused multiply-add.

Measured against jax.lax.erf_inv (jit, CPU): identical bits on all 2**23 inputs that
`random.normal` can draw in float32, on 2**23 random float32 in [-1, 1] whose result is a normal
number, and on all 65,536 float16 values (computed in float32, as XLA does). XLA:CPU flushes
subnormal results to zero; this impl keeps them (IEEE gradual underflow, as numpy and the rest of
numbax), so for |x| < ~1.33e-38 it returns a subnormal where JAX returns +-0. float64 uses
scipy's erfinv (XLA uses a double-precision Giles polynomial there; the two agree to a few ulp).
"""
from __future__ import annotations

import numpy as np

from numbax._src.lazy_module import lazy

sp = lazy("scipy.special")

_F32 = np.float32
_F64 = np.float64
_TINY32 = _F32(np.finfo(np.float32).tiny)


def _hex32(bits: int) -> np.float32:
    return np.array(bits, np.uint32).view(np.float32)[()]


def _round_to_odd_sum(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """p + c in float64 rounded to odd (exact TwoSum error as the sticky bit).

    Rounding the result once more to float32 then gives the correctly rounded float32 sum,
    since float64 carries more than 24 + 2 bits.
    """
    hi = p + c
    bb = hi - p
    lo = (p - (hi - bb)) + (c - bb)
    bits = hi.view(np.int64)
    inexact_even = (lo != 0) & np.isfinite(hi) & ((bits & 1) == 0)
    step = np.where(np.signbit(lo) == np.signbit(hi), 1, -1)
    return np.where(inexact_even, bits + step, bits).view(np.float64)


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Correctly rounded float32 a * b + c (what the CPU's FMA instruction gives).

    a * b is exact in float64; the float64 sum is rounded twice only when it lands on a float32
    halfway point (or in float32's subnormal range), and those few are redone by round-to-odd.
    """
    p = np.multiply(a, b, dtype=_F64)
    s = np.add(p, c, dtype=_F64)
    out = s.astype(_F32)
    bits = s.view(np.uint64)
    ambiguous = (bits & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
    ambiguous |= (bits & np.uint64(0x7FF0000000000000)) < np.uint64(0x3810000000000000)
    if ambiguous.any():
        p_b, c_b = np.broadcast_arrays(p, np.asarray(c, _F64))
        out[ambiguous] = _round_to_odd_sum(p_b[ambiguous], c_b[ambiguous]).astype(_F32)
    return out


# XLA:CPU's float32 log: frexp into [0.5, 1), Cephes' polynomial in z = m - 1 (or 2m - 1).
_LOG_A = (_hex32(0x3D9021BB), _hex32(0xBDEBD1B8), _hex32(0x3DEF251A))
_LOG_B = (_hex32(0xBDFE5D4F), _hex32(0x3E11E9BF), _hex32(0xBE2AAE50))
_LOG_C = (_hex32(0x3E4CCEAC), _hex32(0xBE7FFFFC), _hex32(0x3EAAAAAA))
_LN2_HI, _LN2_LO = _hex32(0x3F318000), _hex32(0xB95E8083)
_SQRT_HALF = _hex32(0x3F3504F3)


def _log_f32(a: np.ndarray) -> np.ndarray:
    clamped = np.where(a > _TINY32, a, _TINY32)
    bits = clamped.view(np.uint32)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 127).astype(_F32) + _F32(1)
    m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_F32)
    below = m < _SQRT_HALF
    e = np.where(below, e - _F32(1), e)
    z = (m - _F32(1)) + np.where(below, m, _F32(0))
    z2 = z * z
    z3 = z2 * z
    pa = fma32(fma32(z, _LOG_A[0], _LOG_A[1]), z, _LOG_A[2])
    pb = fma32(fma32(z, _LOG_B[0], _LOG_B[1]), z, _LOG_B[2])
    pc = fma32(fma32(z, _LOG_C[0], _LOG_C[1]), z, _LOG_C[2])
    q = fma32(fma32(pa, z3, pb), z3, pc)
    r = fma32(q, z3, e * _LN2_LO)
    s = fma32(_F32(-0.5), z2, z) + r
    out = fma32(e, _LN2_HI, s)
    out = np.where(a > 0, out, np.where(a == 0, _F32(-np.inf), _F32(np.nan)))
    return np.where(a == _F32(np.inf), _F32(np.inf), out)


# XLA's log1p for |t| < sqrt(2) - 1: t - t^2/2 + t^3 * P(t)/Q(t) (Cephes), highest degree first.
_LOG1P_NUM = tuple(_F32(v) for v in (
    4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
    2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
    2.0039553499201281259648e1))
_LOG1P_DEN = tuple(_F32(v) for v in (
    1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
    3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1))
_LOG1P_SMALL = _F32(0.41421356237309504880)


def _log1p_f32(t: np.ndarray) -> np.ndarray:
    """XLA's float32 log1p of a 1-d array; each branch is computed only where it is taken."""
    out = np.empty_like(t)
    small = np.abs(t) < _LOG1P_SMALL
    out[~small] = _log_f32(t[~small] + _F32(1))
    t = t[small]
    t2 = t * t
    num = np.full_like(t, _LOG1P_NUM[0])
    den = np.full_like(t, _LOG1P_DEN[0])
    for n, d in zip(_LOG1P_NUM[1:], _LOG1P_DEN[1:]):
        num = fma32(t, num, n)
        den = fma32(t, den, d)
    out[small] = t + fma32(t2, _F32(-0.5), (t * t2) * (num / den))
    return out


# Giles' float32 erf_inv coefficients, highest degree first (w < 5 and w >= 5).
_ERFINV_LT5 = tuple(_F32(v) for v in (
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941))
_ERFINV_GE5 = tuple(_F32(v) for v in (
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))


def erf_inv_f32(x: np.ndarray) -> np.ndarray:
    """float32 erf_inv as XLA:CPU computes it (bit for bit, subnormal results aside)."""
    x = np.asarray(x, _F32)
    shape = x.shape
    x = x.reshape(-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        log_1m_x2 = _log1p_f32(x * -x)
        central = log_1m_x2 > _F32(-5)
        w = np.where(central, _F32(-2.5) - log_1m_x2, np.sqrt(-log_1m_x2) + _F32(-3))
        p = np.where(central, _ERFINV_LT5[0], _ERFINV_GE5[0])
        for lt5, ge5 in zip(_ERFINV_LT5[1:], _ERFINV_GE5[1:]):
            p = fma32(w, p, np.where(central, lt5, ge5))
        return (x * np.where(np.abs(x) == _F32(1), _F32(np.inf), p)).reshape(shape)


def erf_inv_impl(x: np.ndarray) -> np.ndarray:
    """erf_inv_p's numpy impl: XLA's float32 algorithm up to float32, scipy's for float64."""
    x = np.asarray(x)
    if x.dtype.itemsize <= 4:
        return erf_inv_f32(x).astype(x.dtype)
    return sp.erfinv(x).astype(x.dtype)
