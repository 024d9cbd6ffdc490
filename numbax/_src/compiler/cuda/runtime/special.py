"""Device functions for the special and bit-level primitives the CUDA backend lowers itself:
digamma, polygamma (through Hurwitz's zeta), population_count, nextafter (libdevice), and the
float <-> bits conversions behind float scatter-mul's compare-and-swap loop. The CPU backend
runs scipy's and numpy's implementations of the same primitives; these follow them (scipy's
special values included) to float64 rounding. Generated kernels reach them as `cd.<name>`
(cuda_device re-exports them)."""
from __future__ import annotations

import math

import numpy as np

from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

cuda = cuda_runtime.get_cuda()
from numba.cuda import libdevice  # noqa: E402  (after get_cuda: the simulator is chosen there)

if cuda_runtime.simulator_enabled():
    # the simulator's libdevice functions are stubs returning None: numpy stand-ins, so the
    # logic around them (the CAS loop) still runs in the tests
    _double_as_bits = lambda x: np.float64(x).view(np.int64)  # noqa: E731
    _bits_as_double = lambda b: np.int64(b).view(np.float64)  # noqa: E731
    _float_as_bits = lambda x: np.float32(x).view(np.int32)  # noqa: E731
    _bits_as_float = lambda b: np.int32(b).view(np.float32)  # noqa: E731
    _nextafter64 = lambda x, y: np.nextafter(np.float64(x), np.float64(y))  # noqa: E731
    _nextafter32 = lambda x, y: np.nextafter(np.float32(x), np.float32(y))  # noqa: E731
else:
    _double_as_bits, _bits_as_double = libdevice.double_as_longlong, libdevice.longlong_as_double
    _float_as_bits, _bits_as_float = libdevice.float_as_int, libdevice.int_as_float
    _nextafter64, _nextafter32 = libdevice.nextafter, libdevice.nextafterf

# Euler-Maclaurin tail coefficients of Hurwitz's zeta: (2k)! / B_2k
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)
_EPS = 1.1102230246251565e-16


@cuda.jit(device=True)
def digamma(x):
    """psi(x) in float64: reflection for x < 0, recurrence up to x >= 10, then the asymptotic
    series (terms to x**-14). Poles (0 and the negative integers) are NaN, as JAX's."""
    if x != x or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    r = 0.0
    if x < 0.0:
        r = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    z = 1.0 / (x * x)
    series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (
        1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12.0))))))
    return r + math.log(x) - 0.5 / x - series


@cuda.jit(device=True)
def hurwitz_zeta(s, q):
    """zeta(s, q) = sum_k (k + q)**-s for s > 1: direct terms until q + k > 9, then the
    Euler-Maclaurin tail. Poles at non-positive integer q give inf; other q <= 0 need an
    integer s (else NaN), as scipy."""
    if s == 1.0:
        return math.inf
    if s < 1.0 or s != s or q != q:
        return math.nan
    if q <= 0.0:
        if q == math.floor(q):
            return math.inf
        if s != math.floor(s):
            return math.nan
    total = math.pow(q, -s)
    a = q
    b = 0.0
    i = 0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = math.pow(a, -s)
        total += b
        if abs(b) < _EPS * abs(total):  # |b / total| < eps, without dividing by 0
            return total
    w = a
    total += b * w / (s - 1.0)
    total -= 0.5 * b
    fac = 1.0
    k = 0.0
    for j in range(12):
        fac *= s + k
        b /= w
        t = fac * b / _ZETA_A[j]
        total += t
        if abs(t) < _EPS * abs(total):
            break
        k += 1.0
        fac *= s + k
        b /= w
        k += 1.0
    return total


@cuda.jit(device=True)
def polygamma(m, x):
    """psi^(m)(x) = (-1)**(m + 1) m! zeta(m + 1, x) for m >= 1, digamma for m == 0. At the
    poles (x = 0, -1, ...) inf for odd m and nan for even m, as JAX's."""
    if m == 0.0:
        return digamma(x)
    if x <= 0.0 and x == math.floor(x):
        return math.inf if math.fmod(m, 2.0) == 1.0 else math.nan
    return math.pow(-1.0, m + 1.0) * math.gamma(m + 1.0) * hurwitz_zeta(m + 1.0, x)


@cuda.jit(device=True)
def popcount(x):
    """numpy's bitwise_count: the set bits of |x|."""
    u = np.uint64(abs(x)) if x < 0 else np.uint64(x)
    c = 0
    while u != 0:
        u &= u - np.uint64(1)
        c += 1
    return c


@cuda.jit(device=True)
def mul_bits_f64(bits, v):
    """The int64 bit pattern of (the float64 with pattern `bits`) * v."""
    return _double_as_bits(_bits_as_double(bits) * v)


@cuda.jit(device=True)
def mul_bits_f32(bits, v):
    """The int32 bit pattern of (the float32 with pattern `bits`) * v."""
    return _float_as_bits(_bits_as_float(bits) * v)


@cuda.jit(device=True)
def nextafter64(x, y):
    return _nextafter64(x, y)


@cuda.jit(device=True)
def nextafter32(x, y):
    return _nextafter32(x, y)
