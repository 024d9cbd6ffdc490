"""The error-function family of fastmath.py (erf, erfc, erf_inv), branch-free so LLVM
vectorises the loops that call them, built on fastmath's helpers; generated code reaches them
as `fe.*`. Each is compiled once per signature (cached) and carries `forceinline` (`_JIT`,
LLVM's alwaysinline): linked as plain calls, as fastmath's other functions are, they are over
LLVM's inlining threshold and their loops stayed scalar (15 ns an element); spliced at
Numba-IR level (`inline="always"`, until 2026-12-04) every kernel typed and lowered their
bodies again, ~0.5 s of compile for each erf in a kernel."""
import math

import numpy as np
from numba import njit

from numbax._src.compiler.cpu.runtime.fastmath import (
    clamp_hi,
    exp_core_f32,
    exp_core_f64,
    horner,
    log_f64,
    muladd,
)
from numbax._src.compiler.cpu.runtime.scalars import over_arrays

_JIT = {"error_model": "numpy", "cache": True, "forceinline": True}
_SPLICED = {"error_model": "numpy", "cache": True, "inline": "always"}  # private helpers
_F = np.float32
_F32_ONE = _F(1.0)
_INF = math.inf
_NAN = math.nan


@njit(**_SPLICED)
def _horner_pick(t, lo, mid, hi, use_lo, use_mid):
    """Horner over one of three equal-length coefficient sets, chosen per lane by selects,
    each step one multiply-add as fastmath.horner's (a multiply and an add each before: erf's
    float32 loop went from 71 to 65 instructions a vector, 23 multiplies and adds to 21 FMAs).

    Spliced into its callers at Numba-IR level, where the coefficient arrays are the callers'
    frozen globals: compiled on its own with arrays as arguments, on Intel CPU models LLVM
    unrolled the loop by 4 with a run-time remainder, which no later pass unrolled fully, and
    the kernel loops calling erf_inv stayed scalar (AMD's models do no run-time unrolling)."""
    n = len(lo)
    p = lo[n - 1] if use_lo else (mid[n - 1] if use_mid else hi[n - 1])
    for j in range(n - 2, -1, -1):
        p = muladd(p, t, lo[j] if use_lo else (mid[j] if use_mid else hi[j]))
    return p


_ERF_HI = 6.0  # erf(6) rounds to 1
_ERF_SMALL = 1.0
_ERF_MID = 2.5
_ERF_MID_CENTER = 1.75
_ERF_TAIL_CENTER = 4.25


# erf(x)/x - 1 as a polynomial in x**2 on [0, 1], padded to the erfc length.
_ERF_SMALL_P = np.array((
    0.12837916709551256, -0.37612638903183543, 0.11283791670945163,
    -0.02686617064326223, 0.0052239776073121635, -0.0008548325984526754,
    0.00012055295170706565, -1.492474187515077e-05, 1.6447484326396802e-06,
    -1.6208928119663696e-07, 1.3721935609609203e-08, -7.799301166214199e-10,
    0.0, 0.0, 0.0, 0.0, 0.0,
), dtype=np.float64)
# erfc(x)*exp(x**2) in (x - 1.75) on [1, 2.5], weighted by erfc (absolute erf error).
_ERFC_MID_P = np.array((
    0.2849722347374364, -0.13097634551448853, 0.05576363008707326, -0.02225999524111842,
    0.008404319208410015, -0.0030209746571079046, 0.0010392044984837774,
    -0.00034353330710286384, 0.00010950551842554765, -3.3755506673593114e-05,
    1.0085564673860177e-05, -2.9278865054713192e-06, 8.300371927547802e-07,
    -2.2695192012969505e-07, 5.7317276997014145e-08, -1.781320582702525e-08,
    6.422670025508755e-09,
), dtype=np.float64)
# erfc(x)*exp(x**2) in (x - 4.25) on [2.5, 6], padded.
_ERFC_TAIL_P = np.array((
    0.12934527478490995, -0.028944331391468684, 0.006331866560806248,
    -0.0013559322197583196, 0.0002845753379800818, -5.8601578121084645e-05,
    1.1831926428689003e-05, -2.3716653149533087e-06, 4.6031817565122845e-07,
    -6.613972849160002e-08, 4.681944322039979e-08, 1.8018412895225544e-08,
    9.52308479292855e-09, 2.0984508271502645e-09, 2.784641306750912e-10, 0.0, 0.0,
), dtype=np.float64)


# erfinv(x)/x as a polynomial in w = -log((1 - x)(1 + x)): M. Giles, "Approximating the erfinv
# function" (GPU Computing Gems, 2011), double-precision set, the one XLA uses for float64.
# Three ranges: w < 6.25 in (w - 3.125), w < 16 in (sqrt(w) - 3.25), else in (sqrt(w) - 5).
# Lowest degree first, padded with zero top coefficients to one length for _horner_pick.
_ERFINV_SPLIT_MID = 6.25
_ERFINV_SPLIT_TAIL = 16.0
_ERFINV_CENTRAL_P = np.array((
    1.6536545626831027356, 0.24015818242558961693, -0.0060336708714301490533,
    -0.00074070253416626697512, 0.0001867342080340571352, -1.3882523362786468719e-05,
    -1.3654692000834678645e-06, 4.2347877827932403518e-07, -2.9070369957882005086e-08,
    -4.1126339803469836976e-09, 1.051212273321532285e-09, -5.4154120542946279317e-11,
    -1.2975133253453532498e-11, 2.6335093153082322977e-12, -8.1519341976054721522e-14,
    -4.0545662729752068639e-14, 6.6376381343583238325e-15, 2.0972767875968561637e-17,
    -1.333171662854620906e-16, 1.115787767802518096e-17, 1.2858480715256400167e-18,
    -1.685059138182016589e-19, -3.6444120640178196996e-21,
), dtype=np.float64)
_ERFINV_MID_P = np.array((
    3.0838856104922207635, 1.0052589676941592334, 0.005370914553590063617,
    -0.0037512085075692412107, 0.0024914420961078508066, -0.0016882755560235047313,
    0.00095328937973738049703, -0.0003550375203628474796, 2.4031110387097893999e-05,
    6.8284851459573175448e-05, -4.7318229009055733981e-05, 1.2475304481671778723e-05,
    2.9234449089955446044e-06, -4.013867526981545969e-06, 1.5027403968909827627e-06,
    1.8239629214389227755e-08, -2.7517406297064545428e-07, 9.0756561938885390979e-08,
    2.2137376921775787049e-09, 0.0, 0.0, 0.0, 0.0,
), dtype=np.float64)
_ERFINV_TAIL_P = np.array((
    4.8499064014085844221, 1.0103004648645343977, -0.00013871931833623122026,
    -0.00021503011930044477347, 7.5995277030017761139e-05, -1.9681778105531670567e-05,
    4.5260625972231537039e-06, -9.9298272942317002539e-07, 2.2900482228026654717e-07,
    -6.7711997758452339498e-08, 2.9147953450901080826e-08, -1.4960026627149240478e-08,
    7.6157012080783393804e-09, -3.7894654401267369937e-09, 1.5076572693500548083e-09,
    -2.5556418169965252055e-10, -2.7109920616438573243e-11, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
), dtype=np.float64)


@njit(**_JIT)
def erf_f64(x):
    """Error function for float64: x*(1+P(x**2)) below 1, 1 - exp(-x**2)*Q(x) above."""
    ax = abs(x)
    ax = clamp_hi(ax, _ERF_HI)
    small = ax < _ERF_SMALL
    mid = ax < _ERF_MID
    t = ax * ax if small else (ax - _ERF_MID_CENTER if mid else ax - _ERF_TAIL_CENTER)
    p = _horner_pick(t, _ERF_SMALL_P, _ERFC_MID_P, _ERFC_TAIL_P, small, mid)
    big = 1.0 - exp_core_f64(-ax * ax) * p
    return math.copysign(ax + ax * p if small else big, x)


@njit(**_JIT)  # three coefficient sets, like erf
def erf_inv_f64(x):
    """Inverse error function for float64: x * P(w), w = -log((1 - |x|)(1 + |x|)) (Giles).

    (1 - |x|)(1 + |x|) rather than 1 - x*x: near |x| = 1 the rounding of x*x swamps 1 - x*x
    (450 000 ulp in the last 1e-3). ±inf at ±1, nan outside [-1, 1] and for nan."""
    ax = abs(x)
    w = -log_f64((1.0 - ax) * (1.0 + ax))
    s = math.sqrt(w)
    central = w < _ERFINV_SPLIT_MID
    mid = w < _ERFINV_SPLIT_TAIL
    t = w - 3.125 if central else (s - 3.25 if mid else s - 5.0)
    p = _horner_pick(t, _ERFINV_CENTRAL_P, _ERFINV_MID_P, _ERFINV_TAIL_P, central, mid)
    inside = p * x
    return inside if ax < 1.0 else (math.copysign(_INF, x) if ax == 1.0 else _NAN)


_F32_ERF_HI = _F(4.0)  # erf(4) rounds to 1 in float32
_F32_ERF_SMALL = _F(1.0)
_F32_ERF_CENTER = _F(2.5)


# erf(x)/x - 1 in x**2 on [0, 1], padded to the erfc length.
_F32_ERF_SMALL_P = np.array((
    0.12837916612625122, -0.3761262595653534, 0.11283598095178604, -0.026854360476136208,
    0.00518937548622489, -0.0008019424276426435, 7.884411752456799e-05, 0.0, 0.0,
), dtype=np.float32)
# erfc(x)*exp(x**2) in (x - 2.5) on [1, 4], weighted by erfc.
_F32_ERFC_P = np.array((
    0.210807666182518, -0.07434568554162979, 0.024895574897527695, -0.008156279101967812,
    0.0023323611821979284, -0.0005564853781834245, 0.0006490827072411776,
    0.00027283336385153234, 0.00011509093747008592,
), dtype=np.float32)


@njit(**_JIT)
def erf_f32(x):
    """Error function for float32: x*(1+P(x**2)) below 1, 1 - exp(-x**2)*Q(x) above."""
    ax = abs(x)
    ax = clamp_hi(ax, _F32_ERF_HI)
    small = ax < _F32_ERF_SMALL
    t = ax * ax if small else ax - _F32_ERF_CENTER
    p = _horner_pick(t, _F32_ERF_SMALL_P, _F32_ERFC_P, _F32_ERFC_P, small, small)
    big = _F32_ONE - exp_core_f32(-ax * ax) * p
    return math.copysign(ax + ax * p if small else big, x)


# R in erfc(z) = t * exp(-z*z + R(t)), t = 2 / (2 + z), z >= 0 (Numerical Recipes' form),
# refitted (mpmath, Lawson) in t on [0, 1]: |error| <= 5.3e-9, a relative error of erfc.
_ERFC_R = np.array((
    -1.2655121182321936, 0.9999982035199395, 0.3751016584924315,
    0.08108329257553334, -0.060278480230392464, -0.31545842589106554,
    0.628775757050347, -1.918134575327738, 3.490782844495794,
    -3.3426283828062844, 1.743002726008115, -0.46415433575645204,
    0.04742183085291179,
), dtype=np.float64)


@njit(**_JIT)  # like erf: a plain call stayed in its loops
def erfc_f32(x):
    """1 - erf(x) for float32, computed in float64, where z*z of a float32 z is exact: relative
    accuracy down to erfc's last subnormal (x ~ 10.05), 2 - erfc(-x) below zero."""
    z = abs(np.float64(x))
    t = 2.0 / (2.0 + z)
    y = t * exp_core_f64(-z * z + horner(t, _ERFC_R))
    return np.float32(2.0 - y if x < 0 else y)


@njit(**_JIT)
def erf_inv_f32(x):
    """Inverse error function for float32: the float64 version, rounded once (Giles' float32
    polynomial, which XLA uses, is 3-4 ulp off; this is within 1)."""
    return np.float32(erf_inv_f64(np.float64(x)))


# the array forms of compiled control flow (the nests inline the scalar forms)
erf_f32_array, erf_f64_array = over_arrays(erf_f32), over_arrays(erf_f64)
erfc_f32_array, erf_inv_f64_array = over_arrays(erfc_f32), over_arrays(erf_inv_f64)
