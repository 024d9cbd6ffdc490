"""jax.scipy.sparse.linalg.gmres: restarted GMRES, preconditioned on the left (the Krylov
space of M A, its residuals M (b - A x)), on the pytree flattened into one vector.

Each restart builds an orthonormal basis of up to `restart` vectors (classical Gram-Schmidt,
twice over, which keeps the basis orthogonal to rounding) and the Hessenberg matrix of M A on
it. `solve_method="incremental"` turns that matrix triangular with a Givens rotation per new
column, whose running product gives the residual norm free, and ends the restart as soon as it
is below the tolerance; "batched" builds the whole basis, then solves the small least-squares
problem at once. Restarts continue from the last x until the preconditioned residual is
within max(tol * norm(b), atol), scaled by norm(M b) / norm(b), or after `maxiter` of them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax._src.flatten_util import ravel_pytree
from numbax._src.lax.control_flow.loops import fori_loop, while_loop
from numbax._src.numpy import creation, linalg, ufuncs
from numbax._src.numpy.dtypes_api import result_type
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.linalg_norms import norm


def _safe_divide(x: Any, d: Any) -> Any:
    return ufuncs.divide(x, where(d == 0, 1, d))


def _arnoldi_step(apply: Callable, j: Any, basis: Any, hessenberg: Any) -> tuple[Any, Any]:
    """Extends the basis by the part of apply(basis[j]) orthogonal to basis[0..j]; its
    coefficients become column j of the Hessenberg matrix."""
    w = apply(basis[j])
    earlier = creation.arange(basis.shape[0]) <= j
    column = creation.zeros(basis.shape[0], basis.dtype)
    for _ in range(2):  # Gram-Schmidt twice over: orthogonal to rounding
        h = where(earlier, ufuncs.conjugate(basis) @ w, 0)
        w = w - h @ basis
        column = column + h
    size = norm(w)
    basis = basis.at[j + 1].set(_safe_divide(w, size))
    return basis, hessenberg.at[:, j].set(column.at[j + 1].set(size))


def _givens(j: Any, column: Any, cosines: Any, sines: Any) -> tuple[Any, Any, Any]:
    """Column j of the Hessenberg matrix through the rotations of columns 0..j-1, then the
    rotation that zeroes its entry below the diagonal: (column, c, s), s real."""
    def rotate(i, col):
        a, b = col[i], col[i + 1]
        return col.at[i].set(ufuncs.conjugate(cosines[i]) * a + sines[i] * b).at[i + 1].set(
            -sines[i] * a + cosines[i] * b)

    column = fori_loop(0, j, rotate, column)
    a, below = column[j], ufuncs.real(column[j + 1])  # a basis vector's norm: real
    size = ufuncs.sqrt(ufuncs.real(a * ufuncs.conjugate(a)) + below * below)
    c = where(size == 0, 1, _safe_divide(a, size))
    s = where(size == 0, 0, _safe_divide(below, size))
    return column.at[j].set(size).at[j + 1].set(0), c, s


def gmres_loop(matvec: Callable, b: Any, x0: Any, *, tol, atol, maxiter, precondition,
               restart: int, incremental: bool) -> Any:
    flat_b, unravel = ravel_pytree(b)
    x = ravel_pytree(x0)[0]
    n = flat_b.shape[0]
    m = max(1, min(int(restart), n))
    dtype = result_type(flat_b, x)

    def left(v):  # M v on flat vectors
        return ravel_pytree(precondition(unravel(v)))[0].astype(dtype)

    def apply(v):  # M A v
        return left(ravel_pytree(matvec(unravel(v)))[0])

    def residual(x):
        r = left(flat_b - ravel_pytree(matvec(unravel(x)))[0])
        return r, norm(r)

    b_norm = norm(flat_b)
    bound = ufuncs.maximum(tol * b_norm, atol)
    ptol = norm(left(flat_b)) * ufuncs.minimum(1.0, _safe_divide(bound, b_norm))

    def restarting(state):
        _, _, r_norm, k = state
        return (r_norm > ptol) & (k < maxiter)

    def one_restart(state):
        x, r, r_norm, k = state
        basis = creation.zeros((m + 1, n), dtype).at[0].set(_safe_divide(r, r_norm))
        hessenberg = creation.zeros((m + 1, m), dtype)
        g = creation.zeros(m + 1, dtype).at[0].set(r_norm)
        if incremental:
            def building(s):
                j, _, _, g, _, _ = s
                return (j < m) & (ufuncs.absolute(g[j]) > ptol)

            def extend(s):
                j, basis, hessenberg, g, cosines, sines = s
                basis, hessenberg = _arnoldi_step(apply, j, basis, hessenberg)
                column, c, sn = _givens(j, hessenberg[:, j], cosines, sines)
                g = g.at[j + 1].set(-sn * g[j]).at[j].set(ufuncs.conjugate(c) * g[j])
                return (j + 1, basis, hessenberg.at[:, j].set(column), g,
                        cosines.at[j].set(c), sines.at[j].set(sn))

            sines0 = creation.zeros(m, ufuncs.real(g).dtype)
            used, basis, hessenberg, g, _, _ = while_loop(
                building, extend, (0, basis, hessenberg, g, creation.zeros(m, dtype), sines0))
            unused = creation.arange(m) >= used  # identity rows: y = 0 there
            triangle = hessenberg[:m] + creation.eye(m, dtype=dtype) * unused
            y = linalg.solve(triangle, where(unused, 0, g[:m]))
        else:
            basis, hessenberg = fori_loop(
                0, m, lambda j, s: _arnoldi_step(apply, j, *s), (basis, hessenberg))
            y = linalg.lstsq(hessenberg, g)[0]
        x = x + y @ basis[:m]
        r, r_norm = residual(x)
        return x, r, r_norm, k + 1

    r, r_norm = residual(x)
    return unravel(while_loop(restarting, one_restart, (x, r, r_norm, 0))[0])

