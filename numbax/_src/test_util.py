"""Gradient checking against finite differences (JAX's `jax.test_util.check_grads`)."""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import api, core, dtypes
from numbax._src import tree_util as tu
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError

EPS = 1e-4

default_tolerance: dict[np.dtype, float] = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.int16): 0,
    np.dtype(np.int32): 0, np.dtype(np.int64): 0, np.dtype(np.uint8): 0,
    np.dtype(np.uint16): 0, np.dtype(np.uint32): 0, np.dtype(np.uint64): 0,
    np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
    np.dtype(dtypes.float0): 0,
}

default_gradient_tolerance: dict[np.dtype, float] = {
    np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _dtype(x: Any) -> np.dtype:
    return core.get_aval(x).dtype


def _is_python_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _preserve_input_types(f: Callable) -> Callable:
    def wrapped(*args):
        dtype = _dtype(args[0])
        result = np.array(f(*[np.asarray(a) for a in args]), dtype=dtype)
        if all(_is_python_scalar(a) for a in args):
            return result.item()
        return result

    return wrapped


def _safe_subtract(x: Any, y: Any) -> np.ndarray:
    """x - y with inf - inf == 0."""
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(invalid="ignore"):
        return np.where(np.equal(x, y), np.array(0, x.dtype), np.subtract(x, y, dtype=x.dtype))


_add = functools.partial(tu.tree_map, _preserve_input_types(operator.add))
_sub = functools.partial(tu.tree_map, _preserve_input_types(operator.sub))
_conj = functools.partial(tu.tree_map, _preserve_input_types(np.conj))


def _scalar_mul(xs: Any, a: float) -> Any:
    def mul(x):
        dtype = _dtype(x)
        result = np.multiply(np.asarray(x), np.array(a, dtype=dtype), dtype=dtype)
        return result.item() if _is_python_scalar(x) else result

    return tu.tree_map(mul, xs)


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any],
                  eps: float = EPS) -> Any:
    """Central differences of f at primals along tangents."""
    delta = _scalar_mul(tangents, eps)
    f_pos = f(*_add(primals, delta))
    f_neg = f(*_sub(primals, delta))
    diff = tu.tree_map(_safe_subtract, f_pos, f_neg)
    return _scalar_mul(diff, 0.5 / eps)


def _rand_like(rng: np.random.RandomState, x: Any) -> Any:
    shape, dtype = np.shape(np.asarray(x)), _dtype(x)
    if kind_of(dtype) == "c":
        result = (rng.randn(*shape) + 1j * rng.randn(*shape)).astype(dtype)
    else:
        result = np.asarray(rng.randn(*shape), dtype=dtype)
    return result.item() if _is_python_scalar(x) else result


def _tolerance(dtype: np.dtype, tol: Any) -> float:
    if tol is None:
        tol = {}
    if not isinstance(tol, dict):
        return tol
    tol = {np.dtype(k): v for k, v in tol.items()}
    return tol.get(np.dtype(dtype), default_tolerance.get(np.dtype(dtype), 0))


def _merge_tolerance(tol: Any, default: dict) -> Any:
    if tol is None:
        return default
    if not isinstance(tol, dict):
        return tol
    out = dict(default)
    out.update({np.dtype(k): v for k, v in tol.items()})
    return out


def _assert_close(a: Any, b: Any, atol: Any, rtol: Any, err_msg: str) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise AssertionError(f"{err_msg}: shapes differ, {a.shape} vs {b.shape}")
    if a.dtype == dtypes.float0 or b.dtype == dtypes.float0:
        return
    atol_v = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol))
    rtol_v = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol))
    np.testing.assert_allclose(a, b, atol=atol_v * a.size, rtol=rtol_v * b.size,
                               err_msg=err_msg)


def check_close(xs: Any, ys: Any, atol: Any = None, rtol: Any = None, err_msg: str = "") -> None:
    tu.tree_map(functools.partial(_assert_close, atol=atol, rtol=rtol, err_msg=err_msg), xs, ys)


def _inner_prod(xs: Any, ys: Any) -> float:
    def contract(x, y):
        x, y = np.asarray(x), np.asarray(y)
        return np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1)))

    return tu.tree_reduce(np.add, tu.tree_map(contract, xs, ys))


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: Any = None,
              rtol: Any = None, eps: float = EPS, err_msg: str = "") -> None:
    """Checks f_jvp (typically partial(jvp, f)) against finite differences of f."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rng = np.random.RandomState(0)
    tangent = tu.tree_map(functools.partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    v_out_expected = f(*args)
    t_out_expected = numerical_jvp(f, args, tangent, eps=eps)
    check_close(v_out, v_out_expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    check_close(t_out, t_out_expected, atol, rtol,
                f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: Any = None,
              rtol: Any = None, eps: float = EPS, err_msg: str = "") -> None:
    """Checks f_vjp (typically partial(vjp, f)) against finite differences of f, through
    <cotangent, J tangent> = <J^T cotangent, tangent> for random directions."""
    atol = _merge_tolerance(atol, default_gradient_tolerance)
    rtol = _merge_tolerance(rtol, default_gradient_tolerance)
    rand_like = functools.partial(_rand_like, np.random.RandomState(0))
    v_out, vjpfun = f_vjp(*args)
    v_out_expected = f(*args)
    check_close(v_out, v_out_expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    tangent = tu.tree_map(rand_like, args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tu.tree_map(rand_like, v_out)
    cotangent_out = _conj(vjpfun(_conj(cotangent)))
    ip = _inner_prod(tangent, cotangent_out)
    ip_expected = _inner_prod(tangent_out, cotangent)
    check_close(ip, ip_expected, atol, rtol,
                f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: Any = None, rtol: Any = None,
                eps: float | None = None) -> None:
    """Checks derivatives of f at args up to `order`, against finite differences.

    Forward mode compares jvp with central differences along a random direction; reverse
    mode checks that vjp is the transpose of the (numerical) jvp. Higher orders apply the
    same checks to the jvp / vjp functions themselves.

    Args:
      f: the function to check at f(*args).
      args: a tuple of argument values.
      order: derivatives up to this order are checked.
      modes: "fwd" and/or "rev".
      atol, rtol: tolerances (a number, or a dict from dtype to number).
      eps: the finite-difference step (default 1e-4).

    Raises:
      AssertionError: if a derivative does not match.

    >>> import numbax.numpy as jnp
    >>> from numbax.test_util import check_grads
    >>> check_grads(jnp.sin, (0.5,), order=2)
    """
    if not callable(f):
        raise NumbaxTypeError(f"check_grads: f is a {type(f).__name__}, expected a callable.")
    if not isinstance(args, (tuple, list)):
        raise NumbaxTypeError(
            f"check_grads: args is a {type(args).__name__}, expected a tuple of argument "
            "values. Wrap a single argument as (x,).")
    bad = [m for m in modes if m not in ("fwd", "rev")]
    if bad or isinstance(modes, str):
        raise NumbaxValueError(
            f"check_grads: modes has {modes!r}, expected a sequence of 'fwd' and/or 'rev'.")
    if int(order) < 1:
        raise NumbaxValueError(f"check_grads: order has {order}, expected an integer >= 1.")
    args = tuple(args)
    eps = eps or EPS
    _check_jvp = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    _check_vjp = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def _check_grads(f, args, order, err_msg=""):
        if "fwd" in modes:
            fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
            _check_jvp(f, functools.partial(api.jvp, f), args, err_msg=fwd_msg)
            if order > 1:
                _check_grads(functools.partial(api.jvp, f), (args, args), order - 1, fwd_msg)
        if "rev" in modes:
            rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
            _check_vjp(f, functools.partial(api.vjp, f), args, err_msg=rev_msg)
            if order > 1:
                def f_vjp(*args):
                    out_primal, vjp_fn = api.vjp(f, *args)
                    return vjp_fn(out_primal)

                _check_grads(f_vjp, args, order - 1, rev_msg)

    _check_grads(f, args, int(order))
