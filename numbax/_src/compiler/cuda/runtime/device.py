"""Device functions generated CUDA kernels call as `sc.*`: the scalar helpers shared with the
CPU (compiler/scalar_helpers.py: cdiv, crem, ipow, round_away, round_even, sign, float_to_int,
float_to_uint, shift_left, shift_right_arithmetic, shift_right_logical, clz), compiled here,
and CUDA's own below — rounding to bfloat16, float32 logistic and erf_inv, and the complex
and special functions of complex.py and special.py."""
from __future__ import annotations

import math

import numpy as np

from numbax._src.compiler import scalar_helpers
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

cuda = cuda_runtime.get_cuda()
scalar_helpers.compile_into(globals(), cuda.jit(device=True))


if cuda_runtime.simulator_enabled():  # libdevice's functions are stubs in the simulator
    @cuda.jit(device=True)
    def fdividef(a, b):
        """a / b: the simulator's stand-in for libdevice's fast division."""
        return a / b
else:
    from numba.cuda import libdevice

    fdividef = libdevice.fast_fdividef  # __fdividef: 2 ulp while |b| is in [2**-126, 2**126]


@cuda.jit(device=True)
def round_to_bfloat16(x):
    """float32 x rounded to bfloat16's values, ties to even, NaN to the quiet NaN of its sign
    (the CPU's scalars.round_to_bfloat16, and ml_dtypes' cast): bfloat16 is a float32's upper
    half, so the rounding is integer work on the bits."""
    bits = np.float32(x).view(np.uint32)
    if x != x:
        return np.uint32((bits & np.uint32(0x80000000)) | np.uint32(0x7FC00000)).view(np.float32)
    last_kept = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = np.uint32(bits + np.uint32(0x7FFF) + last_kept)
    return np.uint32(rounded & np.uint32(0xFFFF0000)).view(np.float32)


@cuda.jit(device=True)
def logistic_f32(x):
    """1 / (1 + exp(-x)) in float32 without an IEEE division: z = exp(-|x|) is in [0, 1], so
    the denominator 1 + z is in [1, 2], where the fast division is accurate (2 ulp); for
    x < 0 the numerator is z (= exp(x)), so tiny results keep their relative accuracy.
    NaN stays NaN; -inf gives 0 and inf gives 1."""
    z = math.exp(-abs(x))
    n = z if x < 0 else np.float32(1.0)
    return fdividef(n, np.float32(1.0) + z)


@cuda.jit(device=True)
def erfinv_f32(y):
    """erf^-1 for float32 in float32 arithmetic: Giles' single-precision polynomial alone, the
    form XLA uses (within 4 ulp of the exact value; the float64 path below adds Newton steps,
    which in float64 cost ~70x this on an H100 and dominated random.normal)."""
    if y != y or y < np.float32(-1.0) or y > np.float32(1.0):
        return np.float32(math.nan)
    if y == np.float32(1.0):
        return np.float32(math.inf)
    if y == np.float32(-1.0):
        return np.float32(-math.inf)
    w = -math.log((np.float32(1.0) - y) * (np.float32(1.0) + y))
    if w < np.float32(5.0):
        w = w - np.float32(2.5)
        p = np.float32(2.81022636e-08)
        p = np.float32(3.43273939e-07) + p * w
        p = np.float32(-3.5233877e-06) + p * w
        p = np.float32(-4.39150654e-06) + p * w
        p = np.float32(0.00021858087) + p * w
        p = np.float32(-0.00125372503) + p * w
        p = np.float32(-0.00417768164) + p * w
        p = np.float32(0.246640727) + p * w
        p = np.float32(1.50140941) + p * w
    else:
        w = math.sqrt(w) - np.float32(3.0)
        p = np.float32(-0.000200214257)
        p = np.float32(0.000100950558) + p * w
        p = np.float32(0.00134934322) + p * w
        p = np.float32(-0.00367342844) + p * w
        p = np.float32(0.00573950773) + p * w
        p = np.float32(-0.0076224613) + p * w
        p = np.float32(0.00943887047) + p * w
        p = np.float32(1.00167406) + p * w
        p = np.float32(2.83297682) + p * w
    return p * y


@cuda.jit(device=True)
def erfinv(y):
    """erf^-1 in float64: Giles' single-precision polynomial, then two Newton steps whose
    residual uses erfc away from 0 (keeps the tails accurate); stops once converged."""
    if y != y or y < -1.0 or y > 1.0:
        return math.nan
    if y == 1.0:
        return math.inf
    if y == -1.0:
        return -math.inf
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    x = p * y
    for _ in range(8):  # quadratic: 2 steps from Giles' start; more only far in the tails
        if y > 0.5:
            f = (1.0 - y) - math.erfc(x)
        elif y < -0.5:
            f = math.erfc(-x) - (1.0 + y)
        else:
            f = math.erf(x) - y
        d = 1.1283791670955126 * math.exp(-x * x)
        if d > 0.0:
            step = f / d
            x = x - step
            if abs(step) <= 1e-16 * abs(x):
                break
    return x


# complex helpers live in complex.py; kernels reach them as sc.c_<name>
from numbax._src.compiler.cuda.runtime.complex import (  # noqa: E402, F401
    c_acos,
    c_acosh,
    c_asin,
    c_asinh,
    c_atan,
    c_atanh,
    c_cos,
    c_cosh,
    c_div,
    c_exp,
    c_exp2,
    c_expm1,
    c_isfinite,
    c_log,
    c_log1p,
    c_pow,
    c_sign,
    c_sin,
    c_sinh,
    c_sqrt,
    c_tan,
    c_tanh,
)

# special functions and float-bit helpers live in special.py; kernels reach them as sc.<name>
from numbax._src.compiler.cuda.runtime.special import (  # noqa: E402, F401
    digamma,
    hurwitz_zeta,
    mul_bits_f32,
    mul_bits_f64,
    nextafter32,
    nextafter64,
    polygamma,
    popcount,
)
