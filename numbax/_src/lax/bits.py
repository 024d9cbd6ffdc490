"""Bit-level elementwise primitives: clz (count leading zeros), mulhi (high half of a double-
width product), reduce_precision (rounding to a narrower float format) and the total-order
comparisons eq_to, le_to, lt_to."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew


def _uint(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _sint(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"i{np.dtype(dtype).itemsize}")


# ----------------------------------------------------------------------------- clz

def _clz_impl(x: np.ndarray) -> np.ndarray:
    """Leading zeros by halving: test the top s bits for s = 32, 16, ..., 1."""
    bits = x.dtype.itemsize * 8
    u = np.ascontiguousarray(x).view(_uint(x.dtype)).astype(np.uint64)
    count = np.zeros(u.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        if s >= bits:
            continue
        top_zero = (u >> np.uint64(bits - s)) == 0
        count += np.where(top_zero, s, 0)
        u = np.where(top_zero, (u << np.uint64(s)) & np.uint64(2 ** bits - 1), u)
    count += (u >> np.uint64(bits - 1)) == 0
    return count.astype(x.dtype)


clz_p = ew.unop("clz", _clz_impl, ew._INT)
ad.non_differentiable.add(clz_p)


def clz(x: Any) -> Any:
    """Elementwise count of leading zero bits of an integer array (same dtype).

    >>> clz(np.array([0, 1, 255, -1], np.int32))
    Array([32, 31, 24,  0], dtype=int32)
    """
    return clz_p.bind(x)


# ----------------------------------------------------------------------------- mulhi

_M32 = np.uint64(0xFFFFFFFF)


def _mulhi_u64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """High 64 bits of the 128-bit product of uint64 arrays, from 32-bit limbs."""
    s32 = np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & _M32, a >> s32, b & _M32, b >> s32
    lo_lo, hi_lo, lo_hi, hi_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi, a_hi * b_hi
    cross = (lo_lo >> s32) + (hi_lo & _M32) + lo_hi
    return hi_hi + (hi_lo >> s32) + (cross >> s32)


def _mulhi_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    x, y = np.broadcast_arrays(x, y)
    if bits <= 32:
        wide = np.int64 if kind_of(x.dtype) == "i" else np.uint64
        prod = x.astype(wide) * y.astype(wide)
        return (prod >> wide(bits)).astype(x.dtype)
    ux, uy = x.astype(np.uint64), y.astype(np.uint64)
    hi = _mulhi_u64(ux, uy)
    if kind_of(x.dtype) == "i":  # signed high half: subtract the other operand for each negative
        hi = hi - np.where(x < 0, uy, np.uint64(0)) - np.where(y < 0, ux, np.uint64(0))
    return hi.astype(x.dtype)


mulhi_p = ew.binop("mulhi", _mulhi_impl, ew._INT)
ad.non_differentiable.add(mulhi_p)


def mulhi(x: Any, y: Any, /) -> Any:
    """Elementwise high N bits of the 2N-bit product of N-bit integers.

    >>> mulhi(np.array([2**31 - 1, -7], np.int32), np.array([4, 2**30], np.int32))
    Array([ 1, -2], dtype=int32)
    """
    return mulhi_p.bind(ew._to_operand(x, y), ew._to_operand(y, x))


# ----------------------------------------------------------------------------- reduce_precision

def _reduce_precision_impl(x: np.ndarray, *, exponent_bits: int, mantissa_bits: int):
    """XLA's ReducePrecision: round the mantissa to nearest even, then overflow to +-inf and
    underflow (below the reduced format's normal range) to +-0; NaN stays NaN."""
    finfo = finfo_of(x.dtype)
    src_mant, src_exp = finfo.nmant, x.dtype.itemsize * 8 - 1 - finfo.nmant
    u_t = _uint(x.dtype).type
    # (np.ascontiguousarray makes a 0-d array 1-d: reshape it back)
    bits = np.ascontiguousarray(x).view(_uint(x.dtype)).reshape(x.shape).copy()
    if mantissa_bits < src_mant:
        shift = u_t(src_mant - mantissa_bits)
        last_bit_mask = u_t(1) << shift
        base_bias = (last_bit_mask >> u_t(1)) - u_t(1)
        last_bit = (bits & last_bit_mask) >> shift
        truncation = ~(last_bit_mask - u_t(1))
        bits = (bits + last_bit + base_bias) & truncation
    if exponent_bits < src_exp:
        sign_mask = u_t(1) << u_t(x.dtype.itemsize * 8 - 1)
        exp_mask = u_t((1 << src_exp) - 1) << u_t(src_mant)
        bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        overflow = exponent > (u_t(bias + reduced_bias) << u_t(src_mant))
        underflow = exponent <= (u_t(bias - reduced_bias) << u_t(src_mant))
        signed_zero = bits & sign_mask
        bits = np.where(overflow, signed_zero | exp_mask, np.where(underflow, signed_zero, bits))
    out = bits.view(x.dtype)
    return np.where(np.isnan(x), x, out)


def _reduce_precision_abstract_eval(x: ShapedArray, *, exponent_bits, mantissa_bits) -> list:
    if kind_of(x.dtype) != "f":
        raise NumbaxTypeError(
            f"lax.reduce_precision: operand has dtype {x.dtype}, expected a floating dtype.")
    if exponent_bits < 1:
        raise NumbaxValueError(
            f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise NumbaxValueError(
            f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")
    return [x]


reduce_precision_p = Primitive("reduce_precision")
core.abstract_eval_rules[reduce_precision_p] = _reduce_precision_abstract_eval
core.avals_only.add(reduce_precision_p)
core.impl_rules[reduce_precision_p] = lambda x, **params: [_reduce_precision_impl(x, **params)]
ad.deflinear(reduce_precision_p,
             lambda cts, x, **params: [reduce_precision_p.bind(cts[0], **params)])
batching.defvectorized(reduce_precision_p)


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """operand rounded to a float format with the given exponent and mantissa bits (kept in
    its own dtype): reduce_precision(x, 8, 7) rounds to bfloat16's values.

    >>> reduce_precision(np.float32([1.0 + 2**-11, 70000.0]), 5, 10)  # float16's values
    Array([ 1., inf], dtype=float32)
    """
    exponent_bits = core.concrete_or_error(exponent_bits, "lax.reduce_precision exponent_bits")
    mantissa_bits = core.concrete_or_error(mantissa_bits, "lax.reduce_precision mantissa_bits")
    return reduce_precision_p.bind(operand, exponent_bits=operator.index(exponent_bits),
                                   mantissa_bits=operator.index(mantissa_bits))


# ----------------------------------------------------------------------------- total order

def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Floats as signed integers ordered like XLA's TOTALORDER comparison:
    -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN; integers and booleans as they are."""
    if kind_of(x.dtype) != "f":
        return x
    i = np.ascontiguousarray(x).view(_sint(x.dtype)).reshape(x.shape)
    magnitude = np.iinfo(i.dtype).max
    return np.where(i < 0, i ^ i.dtype.type(magnitude), i)


def _total_order(compare):
    def impl(x, y):
        if kind_of(x.dtype) == "c":
            return compare(*map(_total_order_key, (x.real, y.real))) & np.equal(
                *map(_total_order_key, (x.imag, y.imag)))
        return compare(_total_order_key(x), _total_order_key(y))
    return impl


eq_to_p = ew.binop("eq_to", _total_order(np.equal), ew._ANY, ew._bool_dtype)
le_to_p = ew.binop("le_to", _total_order(np.less_equal), "biuf", ew._bool_dtype)
lt_to_p = ew.binop("lt_to", _total_order(np.less), "biuf", ew._bool_dtype)
for _p in (eq_to_p, le_to_p, lt_to_p):
    ad.non_differentiable.add(_p)
