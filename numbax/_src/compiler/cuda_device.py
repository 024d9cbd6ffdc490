"""Scalar device functions that generated CUDA kernels call: numpy's C integer semantics."""
from __future__ import annotations

import math

from numbax._src import cuda_runtime

cuda = cuda_runtime.get_cuda()


@cuda.jit(device=True)
def cdiv(a, b):
    """Integer division rounding toward zero; division by zero gives 0."""
    if b == 0:
        return a - a
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


@cuda.jit(device=True)
def crem(a, b):
    """Integer remainder with the sign of the dividend (C fmod); by zero gives 0."""
    if b == 0:
        return a - a
    return a - cdiv(a, b) * b


@cuda.jit(device=True)
def round_away(x):
    """Rounds half away from zero (lax.round's default)."""
    r = math.floor(x)
    d = x - r
    if d > 0.5 or (d == 0.5 and x >= 0):
        r += 1
    return r


@cuda.jit(device=True)
def round_even(x):
    """Rounds half to even (np.rint)."""
    r = math.floor(x)
    d = x - r
    if d > 0.5 or (d == 0.5 and math.fmod(r, 2) != 0):
        r += 1
    return r


@cuda.jit(device=True)
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
