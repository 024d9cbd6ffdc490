"""Index, search and scan primitives inside compiled control flow (`fi.*`): the array forms
that let a loop body holding a gather, a scatter, take_along_axis, argmax/argmin or a
cumulative sum stay one compiled loop instead of the driver's host loop (a scan of 1000
Kalman steps, or a fori_loop over `x + jnp.argmax(x)`, paid ~8 us of Python a step there).

Each function takes its operands already reshaped by the lowering (lowerings/flow_arrays.py)
into the few axes it loops over and returns a new array; the rules are the eager ones
(kernels.py, lax/extrema.py): a gather clamps or fills, a scatter combines in index order and
clips or drops, take_along_axis wraps negative indices, the first extremum and the first NaN
win, cumulative sums run in the operand's dtype in order, cummax/cummin follow lax.max/min."""
from __future__ import annotations

import numpy as np
from numba import njit

from numbax._src.compiler.cpu.runtime import kernels, scalars

_JIT = {"error_model": "numpy", "cache": True}


@njit(**_JIT)
def gather(x2, dims, idx2, fill_mode, fill):  # pragma: no cover - compiled
    """Rows of x2 (the indexed axes flattened first) picked by the index rows of idx2."""
    out2 = np.empty((idx2.shape[0], x2.shape[1]), x2.dtype)
    kernels.gather_rows(x2, dims, idx2, fill_mode, fill, out2)
    return out2


@njit(**_JIT)
def scatter(x2, dims, idx2, upd2, op, drop):  # pragma: no cover - compiled
    """A copy of x2 with the rows of upd2 combined into the rows idx2 selects (`op` as
    kernels._combine)."""
    out2 = x2.copy()
    kernels.scatter_rows(out2, dims, idx2, upd2, op, drop)
    return out2


@njit(**_JIT)
def take_along(x3, idx3):  # pragma: no cover - compiled
    """out[a, j, c] = x3[a, idx3[a, j, c], c], a negative index counted from the end."""
    pre, n, post = x3.shape
    out = np.empty(idx3.shape, x3.dtype)
    for a in range(pre):
        for j in range(idx3.shape[1]):
            for c in range(post):
                out[a, j, c] = x3[a, kernels.wrapped(idx3[a, j, c], n), c]
    return out


@njit(**_JIT)
def arg_extremum(x3, larger):  # pragma: no cover - compiled
    """The index along the middle axis of the first largest (`larger`) or smallest value, a
    NaN counting as beyond every number (its first one wins)."""
    pre, n, post = x3.shape
    out = np.zeros((pre, post), np.int64)
    for a in range(pre):
        for c in range(post):
            best = x3[a, 0, c]
            if best != best:
                continue
            for i in range(1, n):
                v = x3[a, i, c]
                if v != v:
                    out[a, c] = i
                    break
                if (v > best) if larger else (v < best):
                    best = v
                    out[a, c] = i
    return out


@njit(**_JIT)
def cumulative(x3, kind, reverse):  # pragma: no cover - compiled
    """Running sums (kind 0), products (1), lax.max (2) or lax.min (3) along the middle axis
    in x3's dtype, from its end when `reverse`."""
    pre, n, post = x3.shape
    out = np.empty_like(x3)
    for a in range(pre):
        for c in range(post):
            for step in range(n):
                i = n - 1 - step if reverse else step
                v = x3[a, i, c]
                if step:
                    prev = out[a, i + 1 if reverse else i - 1, c]
                    if kind == 0:
                        v = prev + v
                    elif kind == 1:
                        v = prev * v
                    elif kind == 2:
                        v = scalars.fmax(prev, v)
                    else:
                        v = scalars.fmin(prev, v)
                out[a, i, c] = v
    return out
