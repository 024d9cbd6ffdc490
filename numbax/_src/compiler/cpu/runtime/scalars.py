"""Scalar helpers that generated kernels call (inlined by Numba): numpy's NaN and C semantics."""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"error_model": "numpy", "cache": True, "inline": "always"}


@njit(**_JIT)
def fmax(a, b):
    """np.maximum on scalars: NaN if either is NaN."""
    if a != a:
        return a
    return a if a >= b else b


@njit(**_JIT)
def fmin(a, b):
    """np.minimum on scalars: NaN if either is NaN."""
    if a != a:
        return a
    return a if a <= b else b


@njit(**_JIT)
def clamp(lo, x, hi):
    return fmin(fmax(x, lo), hi)


@njit(**_JIT)
def cdiv(a, b):
    """Integer division rounding toward zero; division by zero gives 0."""
    if b == 0:
        return a - a
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


@njit(**_JIT)
def crem(a, b):
    """Integer remainder with the sign of the dividend (C fmod); by zero gives 0."""
    if b == 0:
        return a - a
    return a - cdiv(a, b) * b


@njit(**_JIT)
def round_away(x):
    """Rounds half away from zero (lax.round's default)."""
    return np.floor(x + 0.5) if x >= 0 else np.ceil(x - 0.5)


@njit(**_JIT)
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


@njit(**_JIT)
def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


@njit(**_JIT)
def shift_left(x, y, bits):
    """lax.shift_left: shifts of `bits` or more (or negative) give 0, not LLVM's poison."""
    return x << y if 0 <= y < bits else x ^ x


@njit(**_JIT)
def shift_right_arithmetic(x, y, bits, unsigned):
    """lax.shift_right_arithmetic: over-wide shifts fill with the sign bit (0 if unsigned)."""
    if 0 <= y < bits:
        return x >> y
    return x ^ x if unsigned or x >= 0 else (x ^ x) - 1


@njit(**_JIT)
def shift_right_logical(ux, uy, bits):
    """lax.shift_right_logical on the unsigned view of the operand (cast back by the caller)."""
    return ux >> uy if uy < bits else ux ^ ux


@njit(**_JIT)
def complex_div(a, b):
    """numpy's complex division: Numba's raises ZeroDivisionError for a zero divisor, numpy
    gives (a.real / 0, a.imag / 0), i.e. inf/nan parts."""
    if b.real == 0 and b.imag == 0:
        z = abs(b.real)
        return type(a)(complex(a.real / z, a.imag / z))
    return a / b


@njit(**_JIT)
def complex_lt(a, b):
    """numpy's ordering of complex numbers: lexicographic on (real, imag); NaNs compare
    False."""
    return a.real < b.real or (a.real == b.real and a.imag < b.imag)


@njit(**_JIT)
def complex_le(a, b):
    return a.real < b.real or (a.real == b.real and a.imag <= b.imag)
