"""numbax.scipy.optimize.minimize: BFGS with a strong-Wolfe line search (Nocedal & Wright,
Numerical Optimization, algorithms 6.1, 3.5 and 3.6), written with while_loop so that it runs
under jit and vmap as JAX's does."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from numbax._src import api, core
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax.control_flow.loops import while_loop
from numbax._src.numpy import creation, lax_numpy, linalg, reductions, ufuncs
from numbax._src.numpy.lax_numpy import where

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """minimize's result.

    Attributes:
      x: the final point.
      success: whether the gradient norm fell below gtol without a line-search failure.
      status: 0 converged, 1 maxiter reached, 2 + the line search's status when it failed.
      fun: the objective at x.
      jac: the gradient at x.
      hess_inv: the final inverse-Hessian estimate.
      nfev, njev: objective and gradient evaluations.
      nit: iterations.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _int(value: int) -> np.ndarray:
    return np.array(value, dtype=np.int64)


# ----------------------------------------------------------------------------- line search


def _cubic_min(a, fa, fpa, b, fb, c, fc):
    """The minimiser of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rb, rc = fb - fa - fpa * db, fc - fa - fpa * dc
    coef_a = (dc ** 2 * rb - db ** 2 * rc) / denom
    coef_b = (-dc ** 3 * rb + db ** 3 * rc) / denom
    radical = coef_b * coef_b - 3 * coef_a * fpa
    return a + (-coef_b + ufuncs.sqrt(radical)) / (3 * coef_a)


def _quad_min(a, fa, fpa, b, fb):
    """The minimiser of the quadratic through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    curvature = (fb - fa - fpa * db) / (db * db)
    return a - fpa / (2 * curvature)


class _Zoom(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any


def _pick(flag: Any, state: NamedTuple, **updates: Any) -> NamedTuple:
    """state with the given fields replaced where flag holds."""
    return state._replace(**{k: where(flag, v, getattr(state, k)) for k, v in updates.items()})


def _zoom(phi_and_grad, sufficient, curvature, lo, hi, g_0, skip):
    """Algorithm 3.6: shrink [a_lo, a_hi] until a step satisfies the strong Wolfe
    conditions; interpolation by cubic, else quadratic, else bisection (safeguarded)."""
    (a_lo, phi_lo, dphi_lo), (a_hi, phi_hi, dphi_hi) = lo, hi
    state = _Zoom(done=np.array(False), failed=np.array(False), j=_int(0), a_lo=a_lo,
                  phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
                  a_rec=(a_lo + a_hi) / 2, phi_rec=(phi_lo + phi_hi) / 2,
                  a_star=creation.ones_like(a_lo), phi_star=phi_lo, dphi_star=dphi_lo,
                  g_star=g_0, nfev=_int(0))
    tiny = 1e-10 if lax_numpy.asarray(a_lo).dtype == np.float64 else 1e-5

    def body(s):
        width = s.a_hi - s.a_lo
        left, right = ufuncs.minimum(s.a_hi, s.a_lo), ufuncs.maximum(s.a_hi, s.a_lo)
        # the bracket may be reversed (a_hi < a_lo): its size is |width|. (JAX 0.10 tests the
        # signed width, so every zoom on a reversed bracket fails at once.)
        s = s._replace(failed=s.failed | (ufuncs.abs(width) <= tiny))
        cubic = _cubic_min(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = (s.j > 0) & (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
        quad = _quad_min(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = ~use_cubic & (quad > left + 0.1 * width) & (quad < right - 0.1 * width)
        a_j = where(use_cubic, cubic, where(use_quad, quad, (s.a_lo + s.a_hi) / 2))
        phi_j, dphi_j, g_j = phi_and_grad(a_j)
        s = s._replace(nfev=s.nfev + 1)
        to_hi = sufficient(a_j, phi_j) | (phi_j >= s.phi_lo)
        found = curvature(dphi_j) & ~to_hi
        hi_to_lo = (dphi_j * (s.a_hi - s.a_lo) >= 0) & ~to_hi & ~found
        to_lo = ~to_hi & ~found
        s = _pick(to_hi, s, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi,
                  phi_rec=s.phi_hi)
        s = _pick(found, s, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)
        s = s._replace(done=s.done | found)
        s = _pick(hi_to_lo, s, a_hi=s.a_lo, phi_hi=s.phi_lo, dphi_hi=s.dphi_lo,
                  a_rec=s.a_hi, phi_rec=s.phi_hi)
        s = _pick(to_lo & ~hi_to_lo, s, a_rec=s.a_lo, phi_rec=s.phi_lo)
        s = _pick(to_lo, s, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
        j = s.j + 1
        return s._replace(j=j, failed=s.failed | (j >= 30))

    return while_loop(lambda s: ~s.done & ~skip & ~s.failed, body, state)


class _Search(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_prev: Any
    phi_prev: Any
    dphi_prev: Any
    nfev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


def _line_search(fun, x, p, f_0, f_prev, g_0, maxiter, c1=1e-4, c2=0.9):
    """Algorithm 3.5: a step a with f(x + a p) <= f_0 + c1 a f'_0 and |f'(a)| <= c2 |f'_0|,
    starting from min(1, 1.01 * 2 (f_0 - f_prev) / f'_0). Returns (failed, nfev, a, f, g,
    status)."""
    def phi_and_grad(a):
        value, grad = api.value_and_grad(fun)(x + a * p)
        return value, reductions.sum(grad * p), grad

    dphi_0 = reductions.sum(g_0 * p)
    guess = 1.01 * 2 * (f_0 - f_prev) / dphi_0
    start = where(guess > 1, creation.ones_like(guess), guess)

    def sufficient(a, phi):
        return phi > f_0 + c1 * a * dphi_0

    def curvature(dphi):
        return ufuncs.abs(dphi) <= -c2 * dphi_0

    zero = creation.zeros_like(f_0)
    state = _Search(done=np.array(False), failed=np.array(False), i=_int(1), a_prev=zero,
                    phi_prev=f_0, dphi_prev=dphi_0, nfev=_int(0), a_star=zero,
                    phi_star=f_0, dphi_star=dphi_0, g_star=g_0)

    def body(s):
        a_i = where(s.i == 1, start, s.a_prev * 2)
        phi_i, dphi_i, g_i = phi_and_grad(a_i)
        s = s._replace(nfev=s.nfev + 1)
        zoom_up = sufficient(a_i, phi_i) | ((phi_i >= s.phi_prev) & (s.i > 1))
        take_i = curvature(dphi_i) & ~zoom_up
        zoom_down = (dphi_i >= 0) & ~zoom_up & ~take_i
        prev, cur = (s.a_prev, s.phi_prev, s.dphi_prev), (a_i, phi_i, dphi_i)
        up = _zoom(phi_and_grad, sufficient, curvature, prev, cur, g_0, ~zoom_up)
        down = _zoom(phi_and_grad, sufficient, curvature, cur, prev, g_0, ~zoom_down)
        s = s._replace(nfev=s.nfev + up.nfev + down.nfev)
        for flag, zoom in ((zoom_up, up), (zoom_down, down)):
            s = _pick(flag, s, a_star=zoom.a_star, phi_star=zoom.phi_star,
                      dphi_star=zoom.dphi_star, g_star=zoom.g_star)
            s = s._replace(done=s.done | flag, failed=s.failed | (flag & zoom.failed))
        s = _pick(take_i, s, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)
        s = s._replace(done=s.done | take_i)
        return s._replace(i=s.i + 1, a_prev=a_i, phi_prev=phi_i, dphi_prev=dphi_i)

    s = while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = where(s.failed, _int(1), where(s.i > maxiter, _int(3), _int(0)))
    return s.failed | ~s.done, s.nfev, s.a_star, s.phi_star, s.g_star, status


# ----------------------------------------------------------------------------- BFGS


class _BFGS(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    x: Any
    f: Any
    g: Any
    h: Any
    f_prev: Any
    search_status: Any


def _bfgs(fun: Callable, x0: Any, maxiter: int | None = None, norm: Any = np.inf,
          gtol: float = 1e-5, line_search_maxiter: int = 10) -> OptimizeResults:
    if maxiter is None:
        maxiter = int(np.size(x0)) * 200
    d = x0.shape[0]
    f_0, g_0 = api.value_and_grad(fun)(x0)
    state = _BFGS(converged=linalg.norm(g_0, ord=norm) < gtol, failed=np.array(False),
                  k=_int(0), nfev=_int(1), x=x0, f=f_0, g=g_0,
                  h=creation.eye(d, dtype=x0.dtype), f_prev=f_0 + linalg.norm(g_0) / 2,
                  search_status=_int(0))

    def body(s):
        p = -(s.h @ s.g)
        failed, nfev, step, f_new, g_new, status = _line_search(
            fun, s.x, p, s.f, s.f_prev, s.g, line_search_maxiter)
        dx = step * p
        dg = g_new - s.g
        rho = 1 / reductions.sum(dg * dx)
        w = creation.eye(d, dtype=rho.dtype) - rho * (dx[:, None] * dg[None, :])
        h_new = w @ s.h @ w.T + rho * (dx[:, None] * dx[None, :])
        h_new = where(ufuncs.isfinite(rho), h_new, s.h)
        return _BFGS(converged=linalg.norm(g_new, ord=norm) < gtol, failed=failed,
                     k=s.k + 1, nfev=s.nfev + nfev, x=s.x + dx, f=f_new, g=g_new, h=h_new,
                     f_prev=s.f, search_status=status)

    s = while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, state)
    status = where(s.converged, _int(0), where(s.k == maxiter, _int(1), where(
        s.failed, 2 + s.search_status, _int(-1))))
    return OptimizeResults(x=s.x, success=s.converged & ~s.failed, status=status, fun=s.f,
                           jac=s.g, hess_inv=s.h, nfev=s.nfev, njev=s.nfev, nit=s.k)


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str,
             tol: float | None = None, options: Mapping[str, Any] | None = None
             ) -> OptimizeResults:
    """Minimises fun(x, *args) over a 1-D x from x0 (only method='BFGS', as JAX).

    Args:
      fun: the objective, differentiable by numbax.grad, returning a scalar.
      x0: the starting point, 1-D.
      args: extra positional arguments of fun.
      method: 'BFGS' (case-insensitive).
      tol: unused, as in JAX; pass options={'gtol': ...}.
      options: BFGS's maxiter (default 200 * x0.size), norm (of the gradient, default inf),
        gtol (default 1e-5) and line_search_maxiter (default 10).

    Returns:
      OptimizeResults.

    Unlike JAX 0.10: the line search's zoom measures its bracket by |a_hi - a_lo|; JAX
    compares the signed difference, so a zoom on a reversed bracket stops at once with a
    failure (status 3) - on the Rosenbrock function from (-1.2, 1), for one. Runs that never
    zoom on a reversed bracket take JAX's steps exactly.

    >>> import numpy as np
    >>> res = minimize(lambda x: ((x - 3.0) ** 2).sum(), np.zeros(2), method="BFGS")
    >>> [round(float(v), 6) for v in res.x], bool(res.success)
    ([3.0, 3.0], True)
    """
    if not callable(fun):
        raise NumbaxTypeError(
            f"numbax.scipy.optimize.minimize: fun has type {type(fun).__name__}, expected a "
            "callable.")
    if not isinstance(args, tuple):
        raise NumbaxTypeError(
            f"numbax.scipy.optimize.minimize: args has type {type(args).__name__}, expected a "
            "tuple of extra arguments.")
    if not isinstance(method, str) or method.lower() != "bfgs":
        raise NumbaxValueError(
            f"numbax.scipy.optimize.minimize: method {method!r} is not supported; use "
            "method='BFGS'.")
    if not (isinstance(x0, (list, tuple)) or core.is_array_like(x0)):
        raise NumbaxTypeError(
            f"numbax.scipy.optimize.minimize: x0 has type {type(x0).__name__}, expected an "
            "array.")
    (x0,) = ufuncs.promote_dtypes_inexact("scipy.optimize.minimize", lax_numpy.asarray(x0))
    if x0.ndim != 1:
        raise NumbaxValueError(
            f"numbax.scipy.optimize.minimize: x0 has shape {x0.shape}, expected a 1-D array. "
            "Ravel it (numbax.flatten_util.ravel_pytree for pytrees).")
    options = dict(options or {})
    unknown = set(options) - {"maxiter", "norm", "gtol", "line_search_maxiter"}
    if unknown:
        raise NumbaxValueError(
            f"numbax.scipy.optimize.minimize: unknown options {sorted(unknown)}; BFGS takes "
            "maxiter, norm, gtol and line_search_maxiter.")
    return _bfgs(lambda x: fun(x, *args), x0, **options)
