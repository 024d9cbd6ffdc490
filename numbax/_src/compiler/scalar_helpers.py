"""Scalar helpers that generated kernels call, written once as plain Python and compiled by each
backend (`njit(forceinline=True)` in cpu/runtime/scalars.py, `cuda.jit(device=True)` in
cuda/runtime/device.py). They give XLA's integer and numpy's rounding semantics where
Numba's operators differ (division by zero, negative quotients, over-wide shifts).

Only operations both Numba targets compile belong here: arithmetic, comparisons and `math`
functions that return floats."""
from __future__ import annotations

import math
import types
from collections.abc import Callable

import numpy as np


def cdiv(a, b):
    """Integer division rounding toward zero; division by zero gives -1 (all bits set, XLA's
    result), and MIN // -1 wraps to MIN (the hardware division would trap or give garbage)."""
    if b == 0:
        return ~(a - a)
    if b == -1:
        return -a
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


def crem(a, b):
    """Integer remainder with the sign of the dividend (C fmod); by zero gives a (XLA's)."""
    if b == 0:
        return a
    return a - cdiv(a, b) * b


def udiv(a, b):
    """cdiv of unsigned integers, whose arithmetic stays unsigned (Numba widens a mix of
    unsigned and signed to float64): by zero gives all bits set."""
    if b == 0:
        return ~(a ^ a)
    return a // b


def urem(a, b):
    """crem of unsigned integers: by zero gives a."""
    if b == 0:
        return a
    return a % b


def ipow(x, y):
    """x**y for a non-negative integer y by repeated squaring."""
    acc = x - x + 1
    base = x
    while y > 0:
        if y & 1:
            acc = acc * base
        base = base * base
        y >>= 1
    return acc


def round_away(x):
    """Rounds half away from zero (lax.round's default), in float64: adding and removing 2**52
    rounds |x| to the nearest even integer exactly, and a fraction of exactly one half left
    behind is rounded up (0.49999999999999994 gives 0, 2.5 gives 3, -0.3 gives -0.0)."""
    x = np.float64(x)  # explicit: the CUDA simulator runs this on numpy scalars (NEP 50)
    y = abs(x)
    if not y < 4503599627370496.0:  # nan, inf and |x| >= 2**52 are integers already
        return x
    r = (y + 4503599627370496.0) - 4503599627370496.0
    if y - r == 0.5:
        r = r + 1.0
    return math.copysign(r, x)


def sign(x):
    """np.sign of a real number: +0.0 for either zero (Numba's np.sign and CUDA's copysign
    keep -0.0), NaN for NaN; the caller casts to the operand's dtype."""
    if x > 0:
        return 1
    if x < 0:
        return -1
    return x - x  # +0 for +-0, NaN for NaN


def round_to_float16(x):
    """x rounded to the nearest float16 value (ties to even, float16's subnormals, inf past
    65504), in float64: a float16 op computed in float32 then rounded once gives numpy's
    float16 result. Adding and removing 1.5 * 2**52 rounds a float64 below 2**51 to an
    integer, ties to even."""
    y = np.float64(x)  # explicit: the CUDA simulator runs this on numpy scalars
    a = abs(y)
    if not a < 65520.0:  # nan, inf, and what rounds past float16's largest value
        return y if a != a else math.copysign(math.inf, y)
    if a < 6.103515625e-05:  # below the smallest normal float16: multiples of 2**-24
        s = 16777216.0
    else:
        s = math.ldexp(1.0, 11 - math.frexp(a)[1])  # 11 significant bits
    q = ((a * s + 6755399441055744.0) - 6755399441055744.0) / s
    return math.copysign(q, y)


def float_to_int(x, lo, hi):
    """JAX's (XLA's) float -> integer conversion to a type of range [lo, hi] (within int64's):
    truncation toward zero, saturated at the range's ends, NaN to 0. Returned as int64 (LLVM's
    own conversion is poison out of range); the caller's cast keeps the value."""
    if x != x:
        return np.int64(0)
    if x >= float(hi) + 1.0:  # (hi + 1 is a power of two: exact in every float type)
        return np.int64(hi)
    if x <= float(lo) - 1.0:
        return np.int64(lo)
    return np.int64(x)


def float_to_uint(x):
    """float_to_int for uint64, whose values from 2**63 up have no int64: the uint64 bits as
    an int64 (2**63 and up converted after subtracting 2**63, whose bit is set back)."""
    if x >= 9223372036854775808.0:
        if x >= 18446744073709551616.0:
            return np.int64(-1)  # all ones: uint64's largest value
        return np.int64(x - 9223372036854775808.0) ^ np.int64(-9223372036854775808)
    return float_to_int(x, 0, 9223372036854775807)


def round_even(x):
    """np.rint in float64: adding and removing 2**52 rounds |x| to the nearest even integer
    exactly, and the result keeps x's sign (rint(-0.3) is -0.0; found by the fuzzer's CUDA
    slice, where floor-based rounding gave +0.0)."""
    x = np.float64(x)
    y = abs(x)
    if not y < 4503599627370496.0:  # nan, inf and |x| >= 2**52 are integers already
        return x
    return math.copysign((y + 4503599627370496.0) - 4503599627370496.0, x)


def shift_left(x, y, bits):
    """lax.shift_left: shifts of `bits` or more (or negative) give 0, not LLVM's poison."""
    return x << y if 0 <= y < bits else x ^ x


def shift_right_arithmetic(x, y, bits):
    """lax.shift_right_arithmetic of a signed x: over-wide (or negative) shifts fill with the
    sign bit. Unsigned operands come as their signed view, as XLA shifts their bits."""
    if 0 <= y < bits:
        return x >> y
    return x ^ x if x >= 0 else (x ^ x) - 1


def shift_right_logical(ux, uy, bits):
    """lax.shift_right_logical on the unsigned view of the operand (cast back by the caller)."""
    return ux >> uy if uy < bits else ux ^ ux


def clz(x, bits):
    """lax.clz: leading zero bits of x's `bits`-bit two's complement form (bits for 0)."""
    n = 0
    for i in range(bits - 1, -1, -1):
        if (x >> i) & 1:
            return n
        n += 1
    return n


def threefry_round(y0, y1, r):
    """One round of threefry2x32 on uint32 words: y0 += y1, then y1 rotated left by r, xor y0."""
    y0 = np.uint32(y0 + y1)
    y1 = np.uint32((y1 << r) | (y1 >> (np.uint32(32) - r)))
    return y0, np.uint32(y1 ^ y0)


def threefry_rounds(y0, y1, r0, r1, r2, r3):
    """Four rounds of threefry2x32, rotating by r0..r3 (uint32)."""
    y0, y1 = threefry_round(y0, y1, r0)
    y0, y1 = threefry_round(y0, y1, r1)
    y0, y1 = threefry_round(y0, y1, r2)
    return threefry_round(y0, y1, r3)


def threefry_word(k1, k2, x0, x1):
    """Threefry-2x32 of 20 rounds (Salmon et al. 2011) of the counters (x0, x1) under the key
    (k1, k2), all uint32, bit for bit JAX's hash. The two results come as one uint64, the
    first in its high half: a kernel's expression has one value (compiler/threefry.py splits
    it). Written without loops, so inlined into a kernel's loop nothing stops it vectorising."""
    a, b = np.uint32(13), np.uint32(15)
    c, d = np.uint32(26), np.uint32(6)
    e, f = np.uint32(17), np.uint32(29)
    g, h = np.uint32(16), np.uint32(24)
    k1, k2 = np.uint32(k1), np.uint32(k2)
    k3 = np.uint32(k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    y0, y1 = threefry_rounds(np.uint32(x0 + k1), np.uint32(x1 + k2), a, b, c, d)
    y0, y1 = threefry_rounds(np.uint32(y0 + k2), np.uint32(y1 + k3 + np.uint32(1)), e, f, g, h)
    y0, y1 = threefry_rounds(np.uint32(y0 + k3), np.uint32(y1 + k1 + np.uint32(2)), a, b, c, d)
    y0, y1 = threefry_rounds(np.uint32(y0 + k1), np.uint32(y1 + k2 + np.uint32(3)), e, f, g, h)
    y0, y1 = threefry_rounds(np.uint32(y0 + k2), np.uint32(y1 + k3 + np.uint32(4)), a, b, c, d)
    y0, y1 = np.uint32(y0 + k3), np.uint32(y1 + k1 + np.uint32(5))
    return (np.uint64(y0) << np.uint64(32)) | np.uint64(y1)


SHARED = (cdiv, crem, udiv, urem, ipow, round_away, round_even, sign, round_to_float16,
          float_to_int, float_to_uint, shift_left, shift_right_arithmetic, shift_right_logical, clz,
          threefry_round, threefry_rounds, threefry_word)


def compile_into(namespace: dict, decorate: Callable) -> None:
    """Compiles every SHARED helper with `decorate` into `namespace` (a runtime module's
    globals), each one calling the others through that namespace's compiled versions."""
    namespace.setdefault("math", math)
    namespace.setdefault("np", np)
    for fn in SHARED:
        namespace[fn.__name__] = decorate(types.FunctionType(fn.__code__, namespace, fn.__name__))
