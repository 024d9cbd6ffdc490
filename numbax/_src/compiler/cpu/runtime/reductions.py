"""Reduction-accumulator updates LLVM vectorises.

Sums and products: each helper is its own Numba function (not inlined at Numba-IR level), so
its fast-math flags (``reassoc``, ``contract``; never ``nnan``/``ninf``) stay on the one LLVM
instruction it holds after LLVM inlines it: the loop vectorizer may then split the accumulator
into vector lanes, while the rest of the kernel (the exp/log range reductions of
``fastmath.py`` included) keeps strict IEEE semantics.

Max and min of floats: LLVM's ``llvm.maximum``/``llvm.minimum`` (IEEE 754-2019: NaN wins, and
-0 < +0), which the loop vectorizer turns into vector reductions with no flags at all. A
compare-and-select did not vectorise (1M float32 on one VM core: 468 µs; numpy 39), nor did
``llvm.maxnum`` beside a NaN flag; row kernels unrolled 16 scalar lanes instead (~180 µs) and
carried NaN flags. ``llvm.maximum``: 67 µs, NaN propagated by the instruction itself.
"""
from __future__ import annotations

import math

import numba
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_SUM = {"error_model": "numpy", "cache": True, "fastmath": {"reassoc", "contract"}}


@njit(**_SUM)
def add(acc, v):
    return acc + v


@njit(**_SUM)
def mul(acc, v):
    return acc * v


def _ieee_extremum(name: str):
    """An intrinsic calling `llvm.<name>` on two floats (the second cast to the first's type)."""

    @intrinsic
    def extremum(typingctx, acc, v):
        if not isinstance(acc, types.Float) or not isinstance(v, (types.Float, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            fty = args[0].type
            other = context.cast(builder, args[1], signature.args[1], signature.args[0])
            suffix = "f32" if fty == ir.FloatType() else "f64"
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(fty, [fty, fty]), f"llvm.{name}.{suffix}")
            return builder.call(fn, [args[0], other])

        return acc(acc, v), codegen

    return extremum


def _python_extremum(larger: bool):
    """The same in plain Python, for generated modules run with NUMBA_DISABLE_JIT=1."""

    def extremum(acc, v):
        if acc != acc or v != v:
            return acc + v  # NaN
        if acc == v:  # -0 < +0
            return acc if (math.copysign(1.0, acc) > 0) == larger else v
        return acc if (acc > v) == larger else v

    return extremum


if numba.config.DISABLE_JIT:
    _maximum, _minimum = _python_extremum(True), _python_extremum(False)
else:
    _maximum, _minimum = _ieee_extremum("maximum"), _ieee_extremum("minimum")


@njit(error_model="numpy", cache=True)
def max_(acc, v):
    """max of floats, NaN-propagating."""
    return _maximum(acc, v)


@njit(error_model="numpy", cache=True)
def min_(acc, v):
    """min of floats, NaN-propagating."""
    return _minimum(acc, v)


# Whole rows, for compiled control flow's reductions over an array's last axis and its
# whole-array reductions' chunks (flow_loops): one call a row, of functions of their own. The
# same loop written into the loop's kernel with `add` above vectorised alone, but in a large
# kernel LLVM then left another of its loops scalar (a Sinkhorn iteration's exp: 24 -> 52 ms
# for 50 steps on one VM core); called, the kernel took 15.


@njit(**_SUM)
def row_sum(x, zero):
    """The sum of a 1-d float array, in vector lanes (reassociated), accumulated in the type
    of `zero` (x's dtype, or float64 for a float32 array's whole sum)."""
    acc = zero
    for i in range(x.shape[0]):
        acc += x[i]
    return acc


@njit(error_model="numpy", cache=True)
def row_max(x):
    """max of a 1-d float array, NaN-propagating (lax.max's order of zeros)."""
    acc = x.dtype.type(-math.inf)
    for i in range(x.shape[0]):
        acc = _maximum(acc, x[i])
    return acc


@njit(error_model="numpy", cache=True)
def row_min(x):
    """min of a 1-d float array, NaN-propagating (lax.min's order of zeros)."""
    acc = x.dtype.type(math.inf)
    for i in range(x.shape[0]):
        acc = _minimum(acc, x[i])
    return acc
