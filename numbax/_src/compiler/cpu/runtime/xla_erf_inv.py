"""float32 erf_inv for compiled CPU code, step for step the eager impl (lax/erf_inv_xla.py): XLA's
algorithm (Giles' float32 polynomial in -log1p(-x*x), XLA:CPU's own float32 log1p and log), so
jitted samplers give JAX's bits, as eager ones do.

Every fused multiply-add of the eager impl is an explicit `llvm.fma` here (`fma`): correctly
rounded on every CPU, so the results do not depend on what LLVM chooses to contract. Both
branches of each select are computed (branch-free code, which LLVM vectorises), as the eager
impl's np.where does; a branch's value never depends on the other, so the bits are the same.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from numbax._src.compiler.cpu.runtime.scalars import over_arrays

_JIT = {"error_model": "numpy", "cache": True, "forceinline": True}
_F32 = np.float32


def _hex32(bits: int) -> np.float32:
    return np.array(bits, np.uint32).view(np.float32)[()]


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c with one rounding (LLVM's llvm.fma: the FMA instruction, or exact software)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(a)
        fnty = ir.FunctionType(ty, [ty, ty, ty])
        return builder.call(builder.module.declare_intrinsic("llvm.fma", [ty], fnty), args)

    return a(a, b, c), codegen


_TINY = _F32(np.finfo(np.float32).tiny)
_LOG_A = np.array([_hex32(0x3D9021BB), _hex32(0xBDEBD1B8), _hex32(0x3DEF251A)], _F32)
_LOG_B = np.array([_hex32(0xBDFE5D4F), _hex32(0x3E11E9BF), _hex32(0xBE2AAE50)], _F32)
_LOG_C = np.array([_hex32(0x3E4CCEAC), _hex32(0xBE7FFFFC), _hex32(0x3EAAAAAA)], _F32)
_LN2_HI, _LN2_LO = _hex32(0x3F318000), _hex32(0xB95E8083)
_SQRT_HALF = _hex32(0x3F3504F3)
_LOG1P_NUM = np.array([4.5270000862445199635215e-5, 4.9854102823193375972212e-1,
                       6.5787325942061044846969e0, 2.9911919328553073277375e1,
                       6.0949667980987787057556e1, 5.7112963590585538103336e1,
                       2.0039553499201281259648e1], _F32)
_LOG1P_DEN = np.array([1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1,
                       2.2176239823732856465394e2, 3.0909872225312059774938e2,
                       2.1642788614495947685003e2, 6.0118660497603843919306e1], _F32)
_LOG1P_SMALL = _F32(0.41421356237309504880)
_ERFINV_LT5 = np.array([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                        0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                        1.50140941], _F32)
_ERFINV_GE5 = np.array([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                        0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                        2.83297682], _F32)


@njit(**_JIT)
def _log(a):
    """XLA:CPU's float32 log: a frexp split into [0.5, 1), Cephes' polynomial in z."""
    one = np.float32(1.0)
    clamped = a if a > _TINY else _TINY
    bits = np.float32(clamped).view(np.uint32)
    e = np.float32(np.int32(bits >> np.uint32(23)) - np.int32(127)) + one
    m = np.uint32((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(np.float32)
    below = m < _SQRT_HALF
    e = e - one if below else e
    z = (m - one) + (m if below else np.float32(0.0))
    z2 = z * z
    z3 = z2 * z
    pa = fma(fma(z, _LOG_A[0], _LOG_A[1]), z, _LOG_A[2])
    pb = fma(fma(z, _LOG_B[0], _LOG_B[1]), z, _LOG_B[2])
    pc = fma(fma(z, _LOG_C[0], _LOG_C[1]), z, _LOG_C[2])
    q = fma(fma(pa, z3, pb), z3, pc)
    r = fma(q, z3, e * _LN2_LO)
    s = fma(np.float32(-0.5), z2, z) + r
    out = fma(e, _LN2_HI, s)
    edge = -np.float32(math.inf) if a == np.float32(0.0) else np.float32(math.nan)
    out = out if a > np.float32(0.0) else edge
    return np.float32(math.inf) if a == np.float32(math.inf) else out


@njit(**_JIT)
def _log1p(t):
    """XLA's float32 log1p: Cephes' rational for |t| < sqrt(2) - 1, else log(1 + t)."""
    t2 = t * t
    num = _LOG1P_NUM[0]
    den = _LOG1P_DEN[0]
    for k in range(1, 7):
        num = fma(t, num, _LOG1P_NUM[k])
        den = fma(t, den, _LOG1P_DEN[k])
    small = t + fma(t2, np.float32(-0.5), (t * t2) * (num / den))
    large = _log(t + np.float32(1.0))
    return small if abs(t) < _LOG1P_SMALL else large


@njit(**_JIT)  # forceinline: as a plain call it stays in the loop (like fe.erf_*)
def erf_inv_f32(x):
    """float32 erf_inv as XLA:CPU computes it (the eager impl's bits)."""
    x = np.float32(x)
    log_1m_x2 = _log1p(x * -x)
    central = log_1m_x2 > np.float32(-5.0)
    w_lt = np.float32(-2.5) - log_1m_x2
    w_ge = np.float32(np.sqrt(-log_1m_x2)) + np.float32(-3.0)
    w = w_lt if central else w_ge
    p = _ERFINV_LT5[0] if central else _ERFINV_GE5[0]
    for k in range(1, 9):
        p = fma(w, p, _ERFINV_LT5[k] if central else _ERFINV_GE5[k])
    return x * (np.float32(math.inf) if abs(x) == np.float32(1.0) else p)


erf_inv_f32_array = over_arrays(erf_inv_f32)  # compiled control flow's array form
