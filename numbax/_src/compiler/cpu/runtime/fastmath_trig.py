"""Branch-free float32 trigonometric and hyperbolic functions (sin, cos, tan, arcsin, arccos,
arctan, arctan2, sinh, cosh) that LLVM vectorises in Numba loops (`tg.sin_f32` in generated
code, as fastmath.py's exp and log are `fm.*`): Numba lowers `np.sin` to a libm call per
element, which stops the loop vectoriser.

The argument is reduced exactly, whatever its size (Payne and Hanek's method, in float64): a
float32 x is m * 2**s with m an integer of 24 bits, so x * 2/pi mod 4 is m * F_s mod 4 where
F_s = (2**s * 2/pi) mod 4 depends on the exponent alone. `_F1`, `_F2`, `_F3` hold each F_s in
three pieces, cut at fixed binary places (2**-24 and 2**-50), so that m times each of the first
two is exact in float64 and whole quadrants come off exactly; the third, m times the bits
below 2**-50, is rounded once (~2**-79 of a quadrant). The reduced argument, at most a
quarter turn from the nearest quadrant's axis, goes through Taylor polynomials of sine and
cosine on [-pi/4, pi/4] (truncation below 1e-11), and the quadrant picks which and its sign.
2/pi's bits come from Machin's formula in Python integers at import.

The tangent takes sine over cosine of the reduced argument (minus cosine over sine in odd
quadrants). The arctangent, in float64 too, takes |x| to [0, tan(pi/8)] (1/x above
tan(3pi/8), (x-1)/(x+1) between, with pi/2 or pi/4 added back: one division) and a
polynomial fitted here (least
squares on 2,000 points, mpmath's atan as truth: relative error 1.1e-11); the two-argument
form divides the smaller magnitude by the larger and places the angle by the signs, C99's
special cases included (atan2(+-0, -0) = +-pi, atan2(+-inf, -inf) = +-3pi/4, ...); arcsin
and arccos are arctangents of sqrt((1 - x)(1 + x)) ratios, exact to a rounding in float64
where 1 - x of a float32 is exact. sinh and cosh are fastmath's float64 expm1 and exp of
|x| (clamped to 100, where both overflow float32 anyway).

float64 arctan and arctan2 (`atan_f64`, `atan2_f64`) reduce over five intervals instead, each
with an exact numerator, and add the interval's angle as two floats: within 1 and 2 ulp.

Error (float32): within 1 ulp of the correctly rounded result over the whole float32 range
(tests/compiler/cpu/test_fastmath_trig.py: every exponent, the float32 values closest to
multiples of pi/2, the special values); nan and +-inf give nan, -0 gives -0 for sine.
"""
import numpy as np
from numba import njit

from numbax._src.compiler.cpu.runtime.fastmath import clamp_hi, exp_core_f64, expm1_f64

_CALL = {"error_model": "numpy", "cache": True}
_JIT = {**_CALL, "inline": "always"}
_FORCED = {**_CALL, "forceinline": True}  # over LLVM's inlining threshold (fastmath.py)

_BITS = 360  # of 2/pi: F_s for the largest exponent reaches 2**-(104 + 103)


def _two_over_pi(bits: int) -> int:
    """floor(2/pi * 2**bits), from Machin's pi = 16 atan(1/5) - 4 atan(1/239)."""
    guard = bits + 32

    def atan_inv(k: int) -> int:  # atan(1/k) * 2**guard
        total, term, n, sign = 0, (1 << guard) // k, 1, 1
        while term:
            total += sign * (term // n)
            term //= k * k
            n += 2
            sign = -sign
        return total
    pi = 16 * atan_inv(5) - 4 * atan_inv(239)  # pi * 2**guard
    return (2 << (guard + bits)) // pi


def _pieces() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F_s = (2**s * 2/pi) mod 4 for s = -149 ... 104 (a float32's exponent of its integer
    mantissa), cut into the bits above 2**-24, those from 2**-25 to 2**-50 and 53 below."""
    t = _two_over_pi(_BITS)  # 2/pi = t * 2**-_BITS
    f1, f2, f3 = (np.zeros(254) for _ in range(3))
    for k, s in enumerate(range(-149, 105)):
        # (2**s * t * 2**-_BITS) mod 4, as an integer over 2**-w with w = _BITS - s bits
        w = _BITS - s
        frac = t % (4 << w) if w >= 0 else 0
        scale = w - 103  # keep bits down to 2**-103; the rest is below the float's reach
        top = frac >> scale if scale >= 0 else frac << -scale  # F_s * 2**103
        hi, rest = divmod(top, 1 << 79)  # bits above 2**-24
        mid, low = divmod(rest, 1 << 53)  # 2**-25 ... 2**-50, then below
        f1[k], f2[k], f3[k] = hi * 2.0**-24, mid * 2.0**-50, low * 2.0**-103
    return f1, f2, f3


_F1, _F2, _F3 = _pieces()
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: x + _SHIFT - _SHIFT rounds x to an integer
_PI_2 = np.pi / 2
_TINY = np.float32(2.0**-12)  # below it, sin(x) rounds to x and cos(x) to 1
_S = tuple(float((-1) ** k / np.prod(np.arange(1.0, 2 * k + 2))) for k in range(1, 6))
_C = tuple(float((-1) ** k / np.prod(np.arange(1.0, 2 * k + 1))) for k in range(1, 7))


@njit(**_JIT)
def _round(v):
    return (v + _SHIFT) - _SHIFT


@njit(**_JIT)
def _turns(x):
    """|x| as (n, r): |x| = (n + r) * pi/2 with n a quadrant count mod 4 (an exact float
    integer) and |r| <= 1/2, for float32 x that is finite and not tiny."""
    bits = np.float32(x).view(np.int32) & np.int32(0x7FFFFFFF)
    e = np.int32(bits >> np.int32(23))
    m = np.float64(np.int32((bits & np.int32(0x7FFFFF)) | np.int32(0x800000)))
    k = min(max(np.int32(e - np.int32(1)), np.int32(0)), np.int32(253))  # s = e - 150
    p1 = m * _F1[k]
    n1 = _round(p1)
    b = (p1 - n1) + m * _F2[k]
    n2 = _round(b)
    return n1 + n2, (b - n2) + m * _F3[k]


@njit(**_JIT)
def _sin_poly(t):
    z = t * t
    return t + t * z * (_S[0] + z * (_S[1] + z * (_S[2] + z * (_S[3] + z * _S[4]))))


@njit(**_JIT)
def _cos_poly(t):
    z = t * t
    return 1.0 + z * (_C[0] + z * (_C[1] + z * (_C[2] + z * (_C[3] + z * (_C[4] + z * _C[5])))))


@njit(**_JIT)
def _from_quadrant(t, q):
    """sin(t + q * pi/2) for |t| <= pi/4 and an integer q."""
    s = _sin_poly(t)
    c = _cos_poly(t)  # (both, then a select: a branch kept the loop from vectorising)
    v = c if q & np.int64(1) else s
    return -v if q & np.int64(2) else v


@njit(**_JIT)
def _quadrant(n):
    """n mod 4 for an exact float integer |n| < 2**51."""
    return np.float64(n + _SHIFT).view(np.int64) & np.int64(3)


@njit(**_JIT)
def _edges(x, out, tiny):
    """`out`, or `tiny` for |x| below _TINY (where the reduction's table does not reach) and
    nan for x infinite or nan (float32 all)."""
    ax = abs(x)
    out = tiny if ax < _TINY else out
    return out if ax < np.float32(np.inf) else np.float32(np.nan)


@njit(**_FORCED)
def sin_f32(x):
    """sin(x) for float32 x."""
    n, r = _turns(x)
    v = _from_quadrant(r * _PI_2, _quadrant(n))
    return _edges(x, np.float32(-v if x < np.float32(0.0) else v), x)


@njit(**_FORCED)
def cos_f32(x):
    """cos(x) for float32 x: sin(|x| + pi/2)."""
    n, r = _turns(x)
    out = np.float32(_from_quadrant(r * _PI_2, _quadrant(n) + np.int64(1)))
    return _edges(x, out, np.float32(1.0))


# (atan(t) - t) / t**3 in z = t**2 on [0, tan(pi/8)**2], lowest degree first
_ATAN_P = (-0.33333333332035125, 0.19999999195376478, -0.14285633331747044,
           0.11108058975834981, -0.09035823986563044, 0.07173295588182696,
           -0.04121782348322016)
_TAN_PI_8 = 0.41421356237309503
_TAN_3PI_8 = 2.414213562373095


@njit(**_JIT)
def _atan_pos(a):
    """atan(a) for float64 a >= 0 (nan and inf too), in [0, pi/2]."""
    big = a > _TAN_3PI_8
    mid = a > _TAN_PI_8
    num = -1.0 if big else (a - 1.0 if mid else a)
    den = a if big else (a + 1.0 if mid else 1.0)
    t = num / den
    z = t * t
    p = _ATAN_P[6]
    for j in range(5, -1, -1):  # (unrolled by LLVM: the tuple's loads fold away)
        p = p * z + _ATAN_P[j]
    base = _PI_2 if big else (_PI_2 / 2 if mid else 0.0)
    return base + (t + t * z * p)


# float64's (within 2 ulp, as fastmath's; float32's three intervals and degree 6 above are
# half its time, measured): |x| reduced by the angle c of one of five intervals,
# t = tan(atan(x) - c) with an exact numerator (Sterbenz), so t is good to an ulp; then
# (atan(t) - t) / t**3 in z = t**2 on [0, (7/16)**2] (least squares at 400 Chebyshev nodes in
# mpmath at 50 digits: relative error of atan 1.7e-17); atan(c) as two floats
_ATAN64_P = (-0.33333333333333326, 0.19999999999988158, -0.14285714283215528,
             0.11111110905009408, -0.09090900345956142, 0.07692090270836985,
             -0.06663273879195811, 0.058479780987504705, -0.050350650919700354,
             0.03785274887009846, -0.01757594290644411)
_ATAN_HALF = (0.4636476090008061, 2.2698777452961687e-17)
_ATAN_ONE = (0.7853981633974483, 3.061616997868383e-17)
_ATAN_3_2 = (0.982793723247329, 1.3903311031230998e-17)
_PI_2_PAIR = (1.5707963267948966, 6.123233995736766e-17)  # (its first: 2 * pi/4's, exact)


@njit(**_JIT)
def _atan_parts(a):
    """(hi, lo, s) with atan(a) = hi + lo + s for float64 a >= 0 (nan, inf)."""
    top = a >= 2.4375  # 39/16: c = pi/2
    high = a >= 1.1875  # 19/16: c = atan(3/2)
    mid = a >= 0.6875  # 11/16: c = pi/4
    low = a >= 0.4375  # 7/16: c = atan(1/2)
    num = -1.0 if top else (a - 1.5 if high else (a - 1.0 if mid else (2.0 * a - 1.0 if low
                                                                      else a)))
    den = a if top else (1.0 + 1.5 * a if high else (a + 1.0 if mid else (2.0 + a if low
                                                                         else 1.0)))
    t = num / den
    z = t * t
    p = _ATAN64_P[10]
    for j in range(9, -1, -1):  # (unrolled by LLVM: the tuple's loads fold away)
        p = p * z + _ATAN64_P[j]
    hi = _PI_2_PAIR[0] if top else (_ATAN_3_2[0] if high else (_ATAN_ONE[0] if mid else (
        _ATAN_HALF[0] if low else 0.0)))
    lo = _PI_2_PAIR[1] if top else (_ATAN_3_2[1] if high else (_ATAN_ONE[1] if mid else (
        _ATAN_HALF[1] if low else 0.0)))
    return hi, lo, t + t * z * p


@njit(**_FORCED)
def atan_f64(x):
    """arctan(x) for float64 x."""
    hi, lo, s = _atan_parts(abs(x))
    return np.copysign(hi + (s + lo), x)


@njit(**_FORCED)
def atan2_f64(y, x):
    """arctan2(y, x) for float64 y and x: the angle of the point (x, y), in [-pi, pi]."""
    ay, ax = abs(y), abs(x)
    steep = ay > ax
    num, den = (ax, ay) if steep else (ay, ax)
    ratio = 1.0 if num == np.inf else (0.0 if den == 0.0 else num / den)  # inf/inf, 0/0
    hi, lo, s = _atan_parts(ratio)
    # the angle a from the nearer axis, placed: pi/2 - a when steep, pi - a for x < 0 (x = -0
    # too) when not, pi/2 + a when both: q quarter turns plus or minus a
    left = np.signbit(x)
    q = 1.0 if steep else (2.0 if left else 0.0)
    sign = -1.0 if steep != left else 1.0
    angle = (q * _PI_2_PAIR[0] + sign * hi) + (sign * (s + lo) + q * _PI_2_PAIR[1])
    angle = np.copysign(angle, y)
    return angle if ay == ay and ax == ax else np.nan  # (0/0's and inf's rules hid it)


@njit(**_FORCED)
def atan_f32(x):
    """arctan(x) for float32 x."""
    return np.float32(np.copysign(_atan_pos(abs(np.float64(x))), np.float64(x)))


@njit(**_FORCED)
def atan2_f32(y, x):
    """arctan2(y, x) for float32 y and x: the angle of the point (x, y), in [-pi, pi]."""
    ay, ax = abs(np.float64(y)), abs(np.float64(x))
    steep = ay > ax
    num, den = (ax, ay) if steep else (ay, ax)
    inf = np.float64(np.inf)
    ratio = 1.0 if num == inf else (0.0 if den == 0.0 else num / den)  # inf/inf, 0/0
    a = _atan_pos(ratio)
    a = _PI_2 - a if steep else a
    a = 2 * _PI_2 - a if np.signbit(np.float64(x)) else a  # (x = -0 too)
    a = np.copysign(a, np.float64(y))
    return np.float32(a if ay == ay and ax == ax else np.nan)  # (0/0's and inf's rules hid it)


@njit(**_FORCED)
def tan_f32(x):
    """tan(x) for float32 x."""
    n, r = _turns(x)
    t = r * _PI_2
    s = _sin_poly(t)
    c = _cos_poly(t)
    v = -c / s if _quadrant(n) & np.int64(1) else s / c
    return _edges(x, np.float32(-v if x < np.float32(0.0) else v), x)


@njit(**_FORCED)
def asin_f32(x):
    """arcsin(x) for float32 x (nan outside [-1, 1])."""
    a = abs(np.float64(x))
    return np.float32(np.copysign(_atan_pos(a / np.sqrt((1.0 - a) * (1.0 + a))),
                                  np.float64(x)))


@njit(**_FORCED)
def acos_f32(x):
    """arccos(x) for float32 x (nan outside [-1, 1])."""
    v = np.float64(x)
    return np.float32(2.0 * _atan_pos(np.sqrt((1.0 - v) / (1.0 + v))))


@njit(**_FORCED)
def sinh_f32(x):
    """sinh(x) for float32 x."""
    m = expm1_f64(clamp_hi(abs(np.float64(x)), 100.0))
    return np.float32(np.copysign(0.5 * (m + m / (m + 1.0)), np.float64(x)))


@njit(**_FORCED)
def cosh_f32(x):
    """cosh(x) for float32 x."""
    e = exp_core_f64(clamp_hi(abs(np.float64(x)), 100.0))
    return np.float32(0.5 * (e + 1.0 / e))
