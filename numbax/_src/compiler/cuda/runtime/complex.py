"""Complex scalar device functions that generated CUDA kernels call (as `cd.c_*`, re-exported by
cuda_device): the CPU backend's complex semantics without numba's host-only helpers.

numba-cuda lowers cmath.exp/log/sqrt and the trig/hyperbolic functions itself (its
cpython/cmathimpl registry: math.* on the parts, libdevice underneath), but complex `**` calls
the host C helper numba_cpow and complex `/` raises ZeroDivisionError (silently lost in a
kernel): both are written out here on the real and imaginary parts."""
from __future__ import annotations

import cmath
import math

import numpy as np

from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

cuda = cuda_runtime.get_cuda()


@cuda.jit(device=True)
def c_div(a, b):
    """a / b by Smith's method (numpy's): a zero divisor gives numpy's inf/nan, never a raise."""
    ar = a.real
    ai = a.imag
    br = b.real
    bi = b.imag
    abr = abs(br)
    abi = abs(bi)
    if abr >= abi:
        if abr == 0 and abi == 0:
            return complex(ar / abr, ai / abi)
        rat = bi / br
        den = br + bi * rat
        return complex((ar + ai * rat) / den, (ai - ar * rat) / den)
    rat = br / bi
    den = bi + br * rat
    return complex((ar * rat + ai) / den, (ai * rat - ar) / den)


@cuda.jit(device=True)
def c_pow(a, b):
    """a ** b as the CPU backend (numba's numba_cpow = CPython's c_pow, in float64): b == 0
    gives 1, 0 ** b gives 0 (nan + nanj for b with an imaginary part or a negative real part),
    b == 2 is a * a."""
    br = np.float64(b.real)
    bi = np.float64(b.imag)
    if br == 2.0 and bi == 0.0:
        return a * a
    ar = np.float64(a.real)
    ai = np.float64(a.imag)
    if br == 0.0 and bi == 0.0:
        return complex(1.0, 0.0)
    if ar == 0.0 and ai == 0.0:
        if bi != 0.0 or br < 0.0:
            return complex(math.nan, math.nan)
        return complex(0.0, 0.0)
    vabs = math.hypot(ar, ai)
    length = math.pow(vabs, br)
    at = math.atan2(ai, ar)
    phase = at * br
    if bi != 0.0:
        length = length / math.exp(at * bi)
        phase = phase + bi * math.log(vabs)
    return complex(length * math.cos(phase), length * math.sin(phase))


@cuda.jit(device=True)
def c_sign(z):
    """numpy 2's sign: z / |z|, and 0 for 0."""
    r = math.hypot(z.real, z.imag)
    if r == 0:
        return z - z
    return complex(z.real / r, z.imag / r)


@cuda.jit(device=True)
def c_isfinite(z):
    return math.isfinite(z.real) and math.isfinite(z.imag)


@cuda.jit(device=True)
def c_log1p(z):
    """numpy's nc_log1p (what numba's CPU np.log1p computes): log|1+z| + i arg(1+z)."""
    x = z.real + 1
    return complex(math.log(math.hypot(x, z.imag)), math.atan2(z.imag, x))


@cuda.jit(device=True)
def c_expm1(z):
    """numpy's nc_expm1 (numba's CPU np.expm1): e^x cos y - 1 + i e^x sin y."""
    a = math.exp(z.real)
    return complex(a * math.cos(z.imag) - 1, a * math.sin(z.imag))


@cuda.jit(device=True)
def c_exp2(z):
    """2 ** z = exp(z ln 2), as numba's CPU np.exp2."""
    ln2 = 0.6931471805599453
    return cmath.exp(complex(z.real * ln2, z.imag * ln2))


@cuda.jit(device=True)
def c_exp(z):
    return cmath.exp(z)


@cuda.jit(device=True)
def c_log(z):
    return cmath.log(z)


@cuda.jit(device=True)
def c_sqrt(z):
    return cmath.sqrt(z)


@cuda.jit(device=True)
def c_sin(z):
    return cmath.sin(z)


@cuda.jit(device=True)
def c_cos(z):
    return cmath.cos(z)


@cuda.jit(device=True)
def c_tan(z):
    return cmath.tan(z)


@cuda.jit(device=True)
def c_sinh(z):
    return cmath.sinh(z)


@cuda.jit(device=True)
def c_cosh(z):
    return cmath.cosh(z)


@cuda.jit(device=True)
def c_tanh(z):
    return cmath.tanh(z)


@cuda.jit(device=True)
def c_asin(z):
    return cmath.asin(z)


@cuda.jit(device=True)
def c_acos(z):
    return cmath.acos(z)


@cuda.jit(device=True)
def c_atan(z):
    return cmath.atan(z)


@cuda.jit(device=True)
def c_asinh(z):
    return cmath.asinh(z)


@cuda.jit(device=True)
def c_acosh(z):
    return cmath.acosh(z)


@cuda.jit(device=True)
def c_atanh(z):
    return cmath.atanh(z)
