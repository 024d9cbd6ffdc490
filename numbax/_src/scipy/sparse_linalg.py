"""jax.scipy.sparse.linalg's Krylov solvers: `cg` (hermitian positive definite A), `bicgstab`
and `gmres` (sparse_gmres.py; general A) on arrays or pytrees of arrays.

As JAX documents them: A and the preconditioner M are 2D arrays, functions x -> A x, or
objects with `@`; the iteration stops once norm(b - A x) <= max(tol * norm(b), atol) or after
`maxiter` steps (SciPy's default, 10 x the unknowns); `info` is None. The loop is a
`lax.while_loop`, so the solvers run under jit and vmap, and derivatives come from implicit
differentiation (`lax.custom_linear_solve`: another solve of the same kind with the
transpose), not from differentiating through the iterations.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax.control_flow.loops import while_loop
from numbax._src.lax.control_flow.solves import custom_linear_solve
from numbax._src.numpy import creation, reductions, ufuncs
from numbax._src.numpy.dtypes_api import result_type
from numbax._src.numpy.lax_numpy import asarray, where
from numbax._src.scipy.sparse_gmres import gmres_loop


def _linear_map(api: str, name: str, op: Any) -> Callable:
    """x -> op(x) for a function, x -> op @ x for a matrix or an object with `@`."""
    if op is None:
        return lambda x: x
    if callable(op):
        return op
    if isinstance(op, np.ndarray) or hasattr(op, "__matmul__"):
        if getattr(op, "ndim", 2) != 2:
            raise NumbaxValueError(
                f"numbax.scipy.sparse.linalg.{api}: {name} has shape {np.shape(op)}; pass a 2D "
                f"array or a function x -> {name} x.")
        return lambda x: op @ x
    raise NumbaxTypeError(
        f"numbax.scipy.sparse.linalg.{api}: {name} is a {type(op).__name__}; pass a 2D array, "
        f"a function x -> {name} x, or an object with `@`.")


def _vdot(x: Any, y: Any) -> Any:
    """sum over the leaves of conj(x) . y."""
    parts = [reductions.sum(ufuncs.multiply(ufuncs.conjugate(a), b))
             for a, b in zip(tu.tree_leaves(x), tu.tree_leaves(y), strict=True)]
    return functools.reduce(operator.add, parts)


def _squared_norm(x: Any) -> Any:
    return ufuncs.real(_vdot(x, x))


def _axpy(alpha: Any, x: Any, y: Any) -> Any:
    """alpha x + y, leaf by leaf."""
    return tu.tree_map(lambda a, b: ufuncs.add(ufuncs.multiply(alpha, a), b), x, y)


def _sub(x: Any, y: Any) -> Any:
    return tu.tree_map(ufuncs.subtract, x, y)


def _cg_loop(matvec: Callable, b: Any, x0: Any, *, tol, atol, maxiter, precondition) -> Any:
    """Preconditioned conjugate gradients from x0."""
    bound = ufuncs.maximum(tol * tol * _squared_norm(b), atol * atol)
    r = _sub(b, matvec(x0))
    z = precondition(r)
    state = (x0, r, z, _vdot(r, z), 0)

    def running(state):
        _, r, _, _, k = state
        return (_squared_norm(r) > bound) & (k < maxiter)

    def step(state):
        x, r, p, gamma, k = state
        q = matvec(p)
        alpha = gamma / _vdot(p, q)
        x, r = _axpy(alpha, p, x), _axpy(-alpha, q, r)
        z = precondition(r)
        gamma_next = _vdot(r, z)
        return x, r, _axpy(gamma_next / gamma, p, z), gamma_next, k + 1

    return while_loop(running, step, state)[0]


def _bicgstab_loop(matvec: Callable, b: Any, x0: Any, *, tol, atol, maxiter,
                   precondition) -> Any:
    """Preconditioned BiCGSTAB (van der Vorst) from x0; the counter turns negative on a
    breakdown (rho or omega zero), which ends the loop with the last iterate."""
    bound = ufuncs.maximum(tol * tol * _squared_norm(b), atol * atol)
    r = _sub(b, matvec(x0))
    zeros = tu.tree_map(creation.zeros_like, b)
    one = creation.ones((), result_type(*tu.tree_leaves(b)))
    state = (x0, r, r, zeros, zeros, one, one, one, 0)

    def running(state):
        *_, k = state
        return (_squared_norm(state[1]) > bound) & (k < maxiter) & (k >= 0)

    def step(state):
        x, r, r_hat, p, v, rho, alpha, omega, k = state
        rho_next = _vdot(r_hat, r)
        p = _axpy((rho_next / rho) * (alpha / omega), _axpy(-omega, v, p), r)
        p_hat = precondition(p)
        v = matvec(p_hat)
        alpha = rho_next / _vdot(r_hat, v)
        s = _axpy(-alpha, v, r)
        done_early = _squared_norm(s) <= bound  # s is the residual already: no half step
        s_hat = precondition(s)
        t = matvec(s_hat)
        t_t = _vdot(t, t)
        omega_next = where(done_early | (t_t == 0), 0, _vdot(t, s) / where(
            t_t == 0, 1, t_t))
        x = _axpy(omega_next, s_hat, _axpy(alpha, p_hat, x))
        r = _axpy(-omega_next, t, s)
        broke = ~done_early & ((rho_next == 0) | (omega_next == 0))
        k = where(broke, -1, k + 1)
        return x, r, r_hat, p, v, rho_next, alpha, omega_next, k

    return while_loop(running, step, state)[0]


def _isolve(api: str, loop: Callable, A: Any, b: Any, x0: Any, tol: float, atol: float,
            maxiter: int | None, M: Any, symmetric: bool, **options) -> tuple[Any, None]:
    matvec = _linear_map(api, "A", A)
    precondition = _linear_map(api, "M", M)
    b = tu.tree_map(asarray, b)
    if x0 is None:
        x0 = tu.tree_map(creation.zeros_like, b)
    else:
        x0 = tu.tree_map(asarray, x0)
        if tu.tree_structure(x0) != tu.tree_structure(b) or any(
                np.shape(a) != np.shape(c) for a, c in zip(tu.tree_leaves(x0),
                                                           tu.tree_leaves(b), strict=True)):
            raise NumbaxValueError(
                f"numbax.scipy.sparse.linalg.{api}: x0 has structure "
                f"{tu.tree_structure(x0)} and shapes {[np.shape(a) for a in tu.tree_leaves(x0)]}"
                f", expected b's {tu.tree_structure(b)} and "
                f"{[np.shape(a) for a in tu.tree_leaves(b)]}.")
    if maxiter is None:
        maxiter = 10 * sum(int(np.size(a)) for a in tu.tree_leaves(b))
    # (the tangent and transpose solves start from x0 too: any guess of b's shape will do)
    solve = functools.partial(loop, x0=x0, tol=tol, atol=atol, maxiter=maxiter,
                              precondition=precondition, **options)
    real = all(result_type(a).kind != "c" for a in tu.tree_leaves(b))
    x = custom_linear_solve(matvec, b, solve=solve, transpose_solve=solve,
                            symmetric=symmetric and real)
    return x, None


def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solves A x = b by conjugate gradients, for hermitian positive definite A.

    >>> import numpy as np
    >>> x, info = cg(np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0]), tol=1e-10)
    >>> np.round(np.asarray(x), 6)
    array([0.090909, 0.636364])
    """
    return _isolve("cg", _cg_loop, A, b, x0, tol, atol, maxiter, M, symmetric=True)


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solves A x = b by BiCGSTAB, for general (nonsymmetric) A.

    >>> import numpy as np
    >>> x, info = bicgstab(np.array([[3.0, 1.0], [-1.0, 2.0]]), np.array([5.0, 0.0]),
    ...                    tol=1e-10)
    >>> np.round(np.asarray(x), 6)
    array([1.428571, 0.714286])
    """
    return _isolve("bicgstab", _bicgstab_loop, A, b, x0, tol, atol, maxiter, M,
                   symmetric=False)


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
          restart: int = 20, maxiter: int | None = None, M: Any = None,
          solve_method: str = "batched") -> tuple[Any, None]:
    """Solves A x = b by restarted GMRES, for general A: Krylov spaces of `restart` vectors,
    rebuilt from the last x up to `maxiter` times (JAX documents no bound; numbax stops after
    10 x the unknowns, SciPy's default for its solvers). `solve_method` "incremental" ends a
    restart as soon as its residual estimate is within the tolerance; "batched" builds every
    vector first (sparse_gmres.py).

    >>> import numpy as np
    >>> x, info = gmres(np.array([[3.0, 1.0], [-1.0, 2.0]]), np.array([5.0, 0.0]), tol=1e-10)
    >>> np.round(np.asarray(x), 6)
    array([1.428571, 0.714286])
    """
    if solve_method not in ("incremental", "batched"):
        raise NumbaxValueError(
            f"numbax.scipy.sparse.linalg.gmres: solve_method is {solve_method!r}, expected "
            "'incremental' or 'batched'.")
    if int(restart) < 1:
        raise NumbaxValueError(
            f"numbax.scipy.sparse.linalg.gmres: restart is {restart}, expected a positive "
            "number of Krylov vectors.")
    return _isolve("gmres", gmres_loop, A, b, x0, tol, atol, maxiter, M, symmetric=False,
                   restart=int(restart), incremental=solve_method == "incremental")
