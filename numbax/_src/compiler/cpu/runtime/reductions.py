"""Reduction-accumulator updates compiled with reassociation, for vectorised reductions.

Each helper is its own Numba function (not inlined at Numba-IR level), so its fast-math flags
stay on the one LLVM instruction it holds after LLVM inlines it: the loop vectorizer may then
split the accumulator into vector lanes, while the rest of the kernel (the exp/log range
reductions of ``fastmath.py`` included) keeps strict IEEE semantics. Flags: ``reassoc`` and
``contract`` for sums and products, plus ``nsz`` for max/min (the sign of a zero maximum may
differ, as in JAX); never ``nnan``/``ninf``: max/min kernels track NaN in a separate flag.
"""
from __future__ import annotations

from numba import njit

_SUM = {"error_model": "numpy", "cache": True, "fastmath": {"reassoc", "contract"}}
_CMP = {"error_model": "numpy", "cache": True, "fastmath": {"reassoc", "nsz"}}


@njit(**_SUM)
def add(acc, v):
    return acc + v


@njit(**_SUM)
def mul(acc, v):
    return acc * v


@njit(**_CMP)
def max_(acc, v):
    """max ignoring NaN (the kernel ORs a NaN flag alongside)."""
    return v if v > acc else acc


@njit(**_CMP)
def min_(acc, v):
    """min ignoring NaN (the kernel ORs a NaN flag alongside)."""
    return v if v < acc else acc
