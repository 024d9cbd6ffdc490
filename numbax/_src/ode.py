"""jax.experimental.ode.odeint: adaptive Dormand-Prince (RK45) integration with dense output,
differentiated by the adjoint method (the augmented system integrated backwards in time), as
JAX's implementation defines it (the step-size rules, tolerances and interpolation are JAX's,
so results agree with it)."""
from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, dtypes, jnp
from numbax._src import tree_util as tu
from numbax._src.api import vjp, vmap
from numbax._src.closure_convert import closure_convert
from numbax._src.custom_derivatives import custom_vjp
from numbax._src.errors import NumbaxTypeError
from numbax._src.flatten_util import ravel_pytree
from numbax._src.jit import jit
from numbax._src.lax.control_flow.loops import scan, while_loop

# The Dormand-Prince 5(4) tableau: stage times, stage weights, the 5th-order solution, the
# difference to the embedded 4th-order one (the error estimate), and the midpoint weights of
# the dense output.
_ALPHA = np.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_BETA = [np.array(row) for row in (
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])]
_C_SOL = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_C_ERR = np.array([35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085,
                   125 / 192 - 451 / 720, -2187 / 6784 - -12231 / 42400,
                   11 / 84 - 649 / 6300, -1.0 / 60.0])
_C_MID = np.array([6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
                   -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
                   -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2])


def _rk_step(f: Callable, y0: Any, f0: Any, t0: Any, dt: Any):
    """One Dormand-Prince step: (y1, f(y1), error estimate, the seven stage slopes)."""
    dt_y = dt.astype(y0.dtype)
    k = [f0]
    for alpha, beta in zip(_ALPHA, _BETA, strict=True):
        yi = y0 + dt_y * jnp.dot(beta.astype(f0.dtype), jnp.stack(k))
        k.append(f(yi, t0 + dt * alpha))
    ks = jnp.stack(k)
    y1 = dt_y * jnp.dot(_C_SOL.astype(f0.dtype), ks) + y0
    return y1, k[-1], dt_y * jnp.dot(_C_ERR.astype(f0.dtype), ks), ks


def _interp_fit(y0: Any, y1: Any, ks: Any, dt: Any) -> Any:
    """Coefficients of the quartic through the step (dense output), highest power first."""
    dt = dt.astype(y0.dtype)
    y_mid = y0 + dt * jnp.dot(_C_MID.astype(y0.dtype), ks)
    dy0, dy1 = ks[0], ks[-1]
    a = -2.0 * dt * dy0 + 2.0 * dt * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * dt * dy0 - 3.0 * dt * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * dt * dy0 + dt * dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return jnp.stack([a, b, c, dt * dy0, y0])


def _initial_step(f: Callable, t0: Any, y0: Any, order: int, rtol, atol, f0: Any) -> Any:
    """Hairer, Norsett & Wanner's starting step size (Solving ODEs I, sec. II.4)."""
    scale = atol + jnp.abs(y0) * rtol
    d0 = jnp.linalg.norm(y0 / scale.astype(y0.dtype))
    d1 = jnp.linalg.norm(f0 / scale.astype(y0.dtype))
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = f(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale.astype(y0.dtype)) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1.0 / (order + 1.0)))
    return jnp.minimum(100.0 * h0, h1)


def _error_ratio(err: Any, rtol, atol, y0: Any, y1: Any) -> Any:
    tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    ratio = err / tol.astype(err.dtype)
    return jnp.sqrt(jnp.mean(jnp.real(ratio * jnp.conj(ratio))))


def _next_step(dt: Any, ratio: Any, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0) -> Any:
    dfactor = jnp.where(ratio < 1, 1.0, dfactor)
    factor = jnp.minimum(ifactor, jnp.maximum(ratio ** (-1.0 / order) * safety, dfactor))
    return jnp.where(ratio == 0, dt * ifactor, dt * factor)


def _solve(f: Callable, rtol, atol, mxstep, hmax, y0: Any, ts: Any) -> Any:
    """y(ts) of dy/dt = f(y, t) on a flat state, stepping adaptively to each output time and
    reading it off the last step's quartic."""
    def to_target(carry, target):
        def more(state):
            i, _, _, t, dt, _, _ = state
            return (t < target) & (i < mxstep) & (dt > 0)

        def step(state):
            i, y, fy, t, dt, last_t, coeff = state
            y1, f1, err, ks = _rk_step(f, y, fy, t, dt)
            ratio = _error_ratio(err, rtol, atol, y, y1)
            new_coeff = _interp_fit(y, y1, ks, dt)
            dt_next = jnp.clip(_next_step(dt, ratio), 0.0, hmax)
            accept = ratio <= 1.0
            new = (i + 1, y1, f1, t + dt, dt_next, t, new_coeff)
            old = (i + 1, y, fy, t, dt_next, last_t, coeff)
            return tuple(jnp.where(accept, a, b) for a, b in zip(new, old, strict=True))

        _, *carry = while_loop(more, step, (0, *carry))
        _, _, t, _, last_t, coeff = carry
        s = ((target - last_t) / (t - last_t)).astype(coeff.dtype)
        y = coeff[0]
        for c in coeff[1:]:  # Horner, as jnp.polyval
            y = y * s + c
        return tuple(carry), y

    f0 = f(y0, ts[0])
    dt = jnp.clip(_initial_step(f, ts[0], y0, 4, rtol, atol, f0), 0.0, hmax)
    init = (y0, f0, ts[0], dt, ts[0], jnp.stack([y0] * 5))
    _, ys = scan(to_target, init, ts[1:])
    return jnp.concatenate((y0[None], ys))


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    return _solve(lambda y, t: func(y, t, *args), rtol, atol, mxstep, hmax, y0, ts)


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
    """The adjoint method: between output times, integrate backwards (in negated time) the
    state with its cotangent and the cotangents of t0 and of the arguments."""
    ys, ts, args = res

    def augmented(state, minus_t, *args):
        y, y_bar = state[0], state[1]
        y_dot, f_vjp = vjp(func, y, -minus_t, *args)
        return (-y_dot, *f_vjp(y_bar))

    def back(carry, i):
        y_bar, t0_bar, args_bar = carry
        t_bar = jnp.real(jnp.dot(func(ys[i], ts[i], *args), g[i]))
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(
            augmented, (ys[i], y_bar, t0_bar, args_bar), jnp.stack([-ts[i], -ts[i - 1]]),
            *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
        y_bar, t0_bar, args_bar = tu.tree_map(operator.itemgetter(1),
                                              (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], jnp.zeros((), ts.dtype), tu.tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = scan(back, init, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([t0_bar[None], rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_flat(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    y_flat, unravel = ravel_pytree(y0)

    def flat_func(y, t, *args):
        return ravel_pytree(func(unravel(y), t, *args))[0]

    out = _odeint(flat_func, rtol, atol, mxstep, hmax, y_flat, ts, *args)
    return vmap(unravel)(out)


_CONVERTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _converted(func: Callable, y0: Any, t0: Any, args: tuple) -> tuple[Callable, list]:
    """closure_convert(func, ...), kept per function and argument types while its hoisted
    values are concrete, so repeated calls reuse one jitted solver (as JAX caches it)."""
    leaves, tree = tu.tree_flatten((y0, t0, args))
    key = (tree, tuple(core.get_aval(x) for x in leaves))
    try:
        per_func = _CONVERTED.setdefault(func, {})
    except TypeError:  # not weak-referenceable: no cache
        return closure_convert(func, y0, t0, *args)
    if key not in per_func:
        converted, consts = closure_convert(func, y0, t0, *args)
        if any(isinstance(c, core.Tracer) for c in consts):
            return converted, consts  # values of a trace: valid for this call only
        per_func[key] = converted, consts
    return per_func[key]


def odeint(func: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = np.inf, hmax: float = np.inf) -> Any:
    """Integrates dy/dt = func(y, t, *args) from y(t[0]) = y0, reporting y at every t
    (adaptive Dormand-Prince steps; reverse-mode derivatives by the adjoint method).

    Args:
      func: the time derivative, `func(y, t, *args)`, of the same structure as `y0`.
      y0: the initial state (an array or a pytree of arrays).
      t: strictly increasing float times; t[0] is the initial time.
      *args: extra arguments of func (arrays or pytrees of arrays), differentiable.
      rtol, atol: relative and absolute local error tolerances.
      mxstep: the most steps taken to reach each time point.
      hmax: the largest step.

    Returns:
      y at each time in t: the structure of y0 with a new leading axis of len(t).

    >>> import numbax.numpy as jnp
    >>> ys = odeint(lambda y, t, k: -k * y, 1.0, jnp.array([0.0, 1.0]), 2.0)
    >>> round(float(ys[1]), 8) == round(float(jnp.exp(-2.0)), 8)
    True
    """
    if not callable(func):
        raise NumbaxTypeError(f"odeint: func is a {type(func).__name__}, expected a callable.")
    for i, arg in enumerate(tu.tree_leaves(args)):
        if not core.is_array_like(arg):
            raise NumbaxTypeError(
                f"The contents of odeint *args must be arrays or scalars, but got {arg!r} "
                f"(leaf {i}).")
    t = jnp.asarray(t)
    if not dtypes.is_inexact(t.dtype) or dtypes.issubdtype(t.dtype, np.complexfloating):
        raise NumbaxTypeError(f"t must be an array of floats, but got {t}.")
    if t.ndim != 1:
        raise NumbaxTypeError(f"odeint: t has shape {t.shape}, expected a 1-d array of times.")
    converted, consts = _converted(func, y0, t[0], args)
    return _odeint_flat(converted, float(rtol), float(atol), float(mxstep), float(hmax), y0,
                        t, *args, *consts)
