"""LU, triangular solves and Cholesky inside compiled control flow (`fl.*`), on stacks of real
matrices already reshaped to (count, rows, columns) by the lowering (lowerings/flow_arrays.py).

At the top level of a program these run in LAPACK (lowerings/linalg.py); inside a loop body
they kept the whole loop on the driver's host loop, one Python step an iteration: a Kalman
filter's 1000 steps with a 2 x 2 `jnp.linalg.inv` took 71 ms on the VM against jax.jit's 5.
The loop bodies that hold them factor small matrices, where LAPACK's blocking buys nothing,
so these are the textbook unblocked algorithms with the eager rules: LU pivots on the first
largest magnitude as LAPACK's getf2 (a NaN below the diagonal never chosen, a zero pivot
leaving its column), a triangular solve reads one triangle and divides by a zero pivot, and
a matrix that is not positive definite factors to NaNs."""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"error_model": "numpy", "cache": True}


@njit(**_JIT)
def lu(x3, lu_shape, pivots_shape, perm_shape):  # pragma: no cover - compiled
    """(lu, pivots, permutation) of each matrix of x3, in the shapes given: P a = L U with L
    unit lower."""
    count, m, n = x3.shape
    steps = min(m, n)
    a = x3.copy()
    pivots = np.empty((count, steps), np.int32)
    perm = np.empty((count, m), np.int32)
    tiny = np.finfo(x3.dtype).tiny
    for b in range(count):
        for i in range(m):
            perm[b, i] = i
        for k in range(steps):
            p = k
            best = abs(a[b, k, k])
            if best != best:
                best = np.inf
            for i in range(k + 1, m):
                v = abs(a[b, i, k])
                if v > best:
                    best, p = v, i
            pivots[b, k] = p
            if p != k:
                for j in range(n):
                    a[b, k, j], a[b, p, j] = a[b, p, j], a[b, k, j]
                perm[b, k], perm[b, p] = perm[b, p], perm[b, k]
            pivot = a[b, k, k]
            if pivot != 0:
                if abs(pivot) >= tiny:
                    r = 1 / pivot
                    for i in range(k + 1, m):
                        a[b, i, k] *= r
                else:
                    for i in range(k + 1, m):
                        a[b, i, k] /= pivot
            for i in range(k + 1, m):
                f = a[b, i, k]
                for j in range(k + 1, n):
                    a[b, i, j] -= f * a[b, k, j]
    return a.reshape(lu_shape), pivots.reshape(pivots_shape), perm.reshape(perm_shape)


@njit(**_JIT)
def triangular_solve(a3, b3, left_side, lower, transpose_a, unit_diagonal):  # pragma: no cover
    """x with op(a) x = b (`left_side`) or x op(a) = b for each pair of matrices, op(a) = aᵀ
    if `transpose_a`, reading a's `lower` (else upper) triangle and not a unit diagonal."""
    count = a3.shape[0]
    n = a3.shape[1]
    x = b3.copy()
    # x op(a) = b is op(a)ᵀ xᵀ = b ᵀ: either way t y = rhs with t = a or aᵀ
    flip = transpose_a if left_side else not transpose_a
    forward = lower != flip
    cols = x.shape[2] if left_side else x.shape[1]
    for b in range(count):
        for c in range(cols):
            for step in range(n):
                i = step if forward else n - 1 - step
                s = x[b, i, c] if left_side else x[b, c, i]
                lo, hi = (0, i) if forward else (i + 1, n)
                for j in range(lo, hi):
                    t = a3[b, j, i] if flip else a3[b, i, j]
                    s -= t * (x[b, j, c] if left_side else x[b, c, j])
                if not unit_diagonal:
                    s /= a3[b, i, i]
                if left_side:
                    x[b, i, c] = s
                else:
                    x[b, c, i] = s
    return x


@njit(**_JIT)
def cholesky(x3):  # pragma: no cover - compiled
    """The lower Cholesky factor of each matrix of x3 (its lower triangle read); all NaN for
    a matrix that is not positive definite, as numpy's and LAPACK's failure gives."""
    count, n, _ = x3.shape
    out = np.zeros_like(x3)
    for b in range(count):
        ok = True
        for j in range(n):
            d = x3[b, j, j]
            for k in range(j):
                d -= out[b, j, k] * out[b, j, k]
            if not d > 0:
                ok = False
                break
            d = np.sqrt(d)
            out[b, j, j] = d
            for i in range(j + 1, n):
                s = x3[b, i, j]
                for k in range(j):
                    s -= out[b, i, k] * out[b, j, k]
                out[b, i, j] = s / d
        if not ok:
            out[b, :, :] = np.nan
    return out
