"""jax.experimental.checkify: checks that become values. `checkify(f)` returns `(error, out)`;
`check` / `debug_check` add user checks, `check_error` re-raises (or re-threads) an Error. The
check and check_error primitives run eagerly outside checkify (raising JaxRuntimeError), and
under checkify the trace of checkify_trace.py turns them into Error updates."""
from __future__ import annotations

import functools
import inspect
import string
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.checkify_errors import (
    Error,
    JaxException,
    JaxRuntimeError,
    check_concrete_error,
    init_error,
    user_checks,
)
from numbax._src.checkify_trace import CheckifyTrace, check_p, run_checkified
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad, batching

# ----------------------------------------------------------------------------- check_p


def _message(fmt: str, in_tree: Any, payload: list) -> str:
    args, kwargs = tu.tree_unflatten(in_tree, payload)
    return fmt.format(*args, **kwargs) + " (`check` failed)"


def _check_impl(pred, *payload, fmt, in_tree, debug, mapped=0):
    """Outside checkify: raise for the first failing example, with its message (nothing for
    debug_check); `mapped` leading axes come from vmap."""
    if debug:
        return []
    pred = np.asarray(pred)
    failed = np.argwhere(~pred.reshape(pred.shape[:mapped] or (1,)))
    if failed.size == 0:
        return []
    idx = tuple(failed[0]) if mapped else ()
    values = [np.asarray(p)[idx] for p in payload]
    raise JaxRuntimeError(_message(fmt, in_tree, values))


def _check_batch(axis_size, vals, dims, *, mapped=0, **params):
    vals = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]
    return check_p.bind(*vals, mapped=mapped + 1, **params), []


core.abstract_eval_rules[check_p] = lambda *avals, **params: []
core.impl_rules[check_p] = _check_impl
core.effectful_primitives.add(check_p)
ad.jvp_rules[check_p] = lambda primals, tangents, **params: (check_p.bind(*primals, **params),
                                                             [])
ad.transpose_rules[check_p] = lambda cts, *args, **params: [None] * len(args)
batching.batch_rules[check_p] = _check_batch

# ----------------------------------------------------------------------------- check_error_p

check_error_p = core.Primitive("check_error", multiple_results=True)


def _check_error_impl(*leaves, err_tree):
    check_concrete_error(tu.tree_unflatten(err_tree, leaves))
    return []


def _check_error_batch(axis_size, vals, dims, *, err_tree):
    vals = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]
    return check_error_p.bind(*vals, err_tree=err_tree), []


core.abstract_eval_rules[check_error_p] = lambda *avals, **params: []
core.impl_rules[check_error_p] = _check_error_impl
core.effectful_primitives.add(check_error_p)
ad.jvp_rules[check_error_p] = lambda primals, tangents, **params: (
    check_error_p.bind(*primals, **params), [])
ad.transpose_rules[check_error_p] = lambda cts, *args, **params: [None] * len(args)
batching.batch_rules[check_error_p] = _check_error_batch


def _merge_rule(trace, state, vals, *, err_tree):
    state.error = state.error.merge(tu.tree_unflatten(err_tree, vals))
    return []


def _install_merge_rule() -> None:
    from numbax._src import checkify_trace

    checkify_trace._rules[check_error_p] = _merge_rule


_install_merge_rule()

# ----------------------------------------------------------------------------- API


def _bind_check(api: str, pred: Any, msg: str, fmt_args: tuple, fmt_kwargs: dict,
                debug: bool) -> None:
    if not isinstance(msg, str):
        raise NumbaxTypeError(f"{api}: msg is a {type(msg).__name__}, expected a format "
                              "string.")
    if not core.is_array_like(pred):
        raise NumbaxTypeError(f"{api}: pred is a {type(pred).__name__}, expected a boolean "
                              "scalar or array.")
    aval = core.get_aval(pred)
    if aval.dtype != np.bool_ or aval.shape != ():
        raise NumbaxTypeError(f"check takes a scalar pred as argument, got {aval.str_short()} "
                              f"({api}). Reduce an array predicate with jnp.all.")
    leaves, in_tree = tu.tree_flatten((fmt_args, fmt_kwargs))
    from numbax._src.array import Array

    for leaf in leaves:  # as JAX: arrays only, a Python or numpy scalar is refused
        if not isinstance(leaf, (Array, np.ndarray, core.Tracer)):
            raise NumbaxTypeError(
                "Formatting arguments to checkify.check need to be PyTrees of arrays, but got "
                f"{leaf!r} of type {type(leaf)}. Wrap it with jnp.asarray.")
    try:  # the format string must accept the arguments (checked now, formatted on failure)
        string.Formatter().vformat(msg, [0] * len(fmt_args), dict.fromkeys(fmt_kwargs, 0))
    except (IndexError, KeyError) as e:
        raise NumbaxTypeError(f"{api}: msg {msg!r} does not match the formatting arguments "
                              f"({type(e).__name__}: {e}).") from None
    check_p.bind(_into_checkify(pred, leaves), *leaves, fmt=msg, in_tree=in_tree, debug=debug)


def _into_checkify(pred: Any, leaves: list) -> Any:
    """A concrete pred (from Python scalars, which checkify passes through as JAX does) is
    raised into the innermost checkify when that is the transformation running, so a failure
    is recorded in its Error rather than raised."""
    from numbax._src.checkify_trace import CheckifyTrace

    top = core._state.trace_stack[-1]
    if (top.trace_type is CheckifyTrace and core._state.dynamic_trace is None
            and not any(isinstance(x, core.Tracer) for x in (pred, *leaves))):
        return core.full_raise(CheckifyTrace(top), pred)
    return pred


def check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """Checks `pred` (a boolean scalar); when it fails, the
    error `msg.format(*fmt_args, **fmt_kwargs)` is raised (JaxRuntimeError) outside
    checkify, or recorded in the Error that checkify returns.

    Unlike JAX, a check in a function that is jitted but not checkified raises at run time
    when it fails (JAX refuses to compile it).

    >>> import numbax.numpy as jnp
    >>> check(jnp.asarray(2.0) > 0, "x must be positive")
    """
    _bind_check("checkify.check", pred, msg, fmt_args, fmt_kwargs, debug=False)


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """A check that only checkify sees: outside checkify it does nothing.

    >>> debug_check(False, "ignored outside checkify")
    """
    _bind_check("checkify.debug_check", pred, msg, fmt_args, fmt_kwargs, debug=True)


def check_error(error: Error) -> None:
    """Raises JaxRuntimeError if `error` holds a failure; under checkify, the failure goes
    into the error checkify returns instead (so an inner checkify's error can be re-thrown
    from jitted code).

    >>> check_error(init_error)
    """
    if not isinstance(error, Error):
        raise NumbaxTypeError(f"check_error: error is a {type(error).__name__}, expected a "
                              "checkify.Error.")
    leaves, err_tree = tu.tree_flatten(error)
    if not leaves:
        return
    check_error_p.bind(*leaves, err_tree=err_tree)


def _validate_errors(errors: Iterable) -> frozenset:
    errors = frozenset(errors)
    for e in errors:
        if not (inspect.isclass(e) and issubclass(e, JaxException)):
            raise NumbaxTypeError(
                f"checkify: errors holds {e!r}, expected error categories such as "
                "checkify.user_checks, nan_checks, index_checks, div_checks or all_checks.")
    return errors


def _is_python_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def checkify(f: Callable, errors: Iterable = user_checks) -> Callable[..., tuple[Error, Any]]:
    """`f` with its checks turned into a value: `checkify(f)(*args)` returns
    `(error, f(*args))`, where `error.get()` is the first failure's message or None.

    Args:
      f: the function.
      errors: the categories to check: user_checks (checkify.check calls, the default),
        nan_checks (a primitive made a NaN), index_checks (out-of-bounds gathers, scatters
        and dynamic slices), div_checks (division by zero), float_checks, automatic_checks,
        all_checks, or a union of them.

    Returns:
      The checked function; it composes with jit, vmap (a batched Error, reported per
      mapped index) and grad.

    >>> import numbax, numbax.numpy as jnp
    >>> def f(x):
    ...     check(x > 0, "x must be positive, got {}", x)
    ...     return jnp.log(x)
    >>> err, out = numbax.jit(checkify(f))(-1.0)
    >>> err.get()
    'x must be positive, got -1.0 (`check` failed)'
    """
    if not callable(f):
        raise NumbaxTypeError(f"checkify: f is a {type(f).__name__}, expected a callable.")
    enabled = _validate_errors(errors)

    @functools.wraps(f)
    def checked(*args: Any, **kwargs: Any) -> tuple[Error, Any]:
        flat, in_tree = tu.tree_flatten((args, kwargs))
        # as JAX: Python scalars reach f untouched (so `check` refuses them as format args)
        traced = [core.is_array_like(x) and not _is_python_scalar(x) for x in flat]
        store: dict[str, Any] = {}

        def flat_f(*xs):
            it = iter(xs)
            leaves = [next(it) if t else x for x, t in zip(flat, traced, strict=True)]
            a, k = tu.tree_unflatten(in_tree, leaves)
            out_flat, store["tree"] = tu.tree_flatten(f(*a, **k))
            return out_flat

        err, outs = run_checkified(flat_f, enabled, init_error,
                                   [x for x, t in zip(flat, traced, strict=True) if t])
        return err, tu.tree_unflatten(store["tree"], outs)

    return checked


__all__ = ["CheckifyTrace", "check", "check_error", "checkify", "debug_check"]
