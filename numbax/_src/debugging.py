"""jax.debug's callbacks: debug.callback, debug.print and debug.log. Each binds an effectful
primitive (callbacks.py), so it runs with concrete values at every call of a jitted function,
per example under vmap, on primal values under grad, and inside scan/cond/while bodies."""
from __future__ import annotations

import inspect
import logging
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import callbacks
from numbax._src.callback_api import flat_callbacks, split_args
from numbax._src.errors import NumbaxTypeError, NumbaxValueError

logger = logging.getLogger(__name__)


def _one_or_two_calls(api: str, bind: Callable, first: Any, args: tuple,
                      kwargs: dict) -> Callable | None:
    """JAX's two forms: `api(first, *args, option=...)` binds now; `api(option=...)` returns
    the function to call with `first` and the arguments."""
    if first is not None:
        bind(first, *args, **kwargs)
        return None
    if args or kwargs:
        raise NumbaxTypeError(f"{api} received unexpected arguments in the two-call form: "
                              f"{args=} {kwargs=}")
    return bind


def debug_callback(callback: Callable[..., None] | None = None, *args: Any,
                   ordered: bool = False, partitioned: bool = False,
                   **kwargs: Any) -> Callable[..., None] | None:
    """Calls `callback(*args, **kwargs)` on concrete values, also inside jit, vmap, grad and
    control flow, for its side effects (its return value is ignored).

    Two forms, as in JAX: `debug.callback(fn, *args, ordered=False)` and
    `debug.callback(ordered=True)(fn, *args)`. Array leaves arrive as Arrays; other leaves
    (strings, objects) unchanged. Under vmap it runs once per example; under grad on the
    primal values. numbax runs every callback in program order, ordered or not.

    Args:
      callback: a Python callable.
      *args, **kwargs: its arguments.
      ordered: keep the order relative to other ordered callbacks (always true here).
      partitioned: accepted for JAX compatibility (numbax callbacks see whole arrays).

    >>> import numbax
    >>> numbax.jit(lambda x: numbax.debug.callback(print, x * 2))(1.5)
    3.0
    """
    def bind(fn: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fn):
            raise NumbaxTypeError("first argument to jax.debug.callback must be callable, "
                                  f"but got an object of type {type(fn)}")
        dyn, flat = flat_callbacks("debug.callback", fn, c_args, c_kwargs)
        effect = callbacks.ordered_debug_effect if ordered else callbacks.debug_effect
        callbacks.debug_callback_p.bind(*dyn, callback=flat, effect=effect,
                                        partitioned=bool(partitioned))

    return _one_or_two_calls("debug_callback", bind, callback, args, kwargs)


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting anything (JAX's)."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return ""

    def check_unused_args(self, used_args, args, kwargs) -> None:
        unused_args = [arg for i, arg in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise NumbaxValueError(
                f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise NumbaxValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead "
                "should pass in a regular string.")


_checker = _FormatChecker()


def _log_record(level: int) -> logging.LogRecord:
    """A record naming the user's line that called debug.log (the first frame outside
    numbax's debugging modules)."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    file_name, line_no = ("(unknown file)", 0) if frame is None else (
        frame.f_code.co_filename, frame.f_lineno)
    return logger.makeRecord(logger.name, level, file_name, line_no, "", (), None)


def debug_print(fmt: str | None = None, *args: Any, ordered: bool = False,
                partitioned: bool = False, skip_format_check: bool = False,
                _use_logging: bool = False, **kwargs: Any) -> Callable[..., None] | None:
    """Prints `fmt.format(*args, **kwargs)` with concrete values, also inside jit, vmap, grad
    and control flow (under vmap once per example, as in JAX).

    The formatting is delayed, so pass a format string, not an f-string:
    `debug.print("x = {x}", x=x)`. Without `{}` placeholders the arguments are printed after
    the string, separated by spaces. Two forms, as in JAX: `debug.print(fmt, *args,
    ordered=True)` and `debug.print(ordered=True)(fmt, *args)`.

    Args:
      fmt: a str.format string.
      *args, **kwargs: the values to format.
      ordered: print in program order relative to other ordered prints (always true here).
      partitioned: accepted for JAX compatibility.
      skip_format_check: do not check the arguments against the format string.

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.vmap(lambda x: numbax.debug.print("x = {}", x))(jnp.arange(2))
    x = 0
    x = 1
    """
    def bind(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
        if not isinstance(fmt, str):
            raise NumbaxTypeError(f"jax.debug.print: fmt is a {type(fmt).__name__}, expected "
                                  "a format string such as 'x = {}'.")
        if not skip_format_check:
            _checker.format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field_name is not None
        in_tree, dyn, static = split_args("debug.print", c_args, c_kwargs)
        callbacks.debug_print_p.bind(
            *dyn, fmt=fmt, has_placeholders=has_placeholders, in_tree=in_tree,
            logging_record=_log_record(logging.INFO) if _use_logging else None,
            np_printoptions=tuple(np.get_printoptions().items()), ordered=bool(ordered),
            partitioned=bool(partitioned), static_args=static)

    return _one_or_two_calls("debug_print", bind, fmt, args, kwargs)


def debug_log(fmt: str | None = None, *args: Any, ordered: bool = False,
              partitioned: bool = False, skip_format_check: bool = False,
              **kwargs: Any) -> Callable[..., None] | None:
    """debug.print through the `logging` module: an INFO record of logger
    "numbax._src.debugging" naming the calling line, emitted when the value is concrete.

    >>> import logging, numbax
    >>> numbax.debug.log("x = {}", 1.0)  # shown once logging is configured for INFO
    """
    return debug_print(fmt, *args, ordered=ordered, partitioned=partitioned,
                       skip_format_check=skip_format_check, _use_logging=True, **kwargs)
