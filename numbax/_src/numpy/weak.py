"""JAX's "weak in, weak out" for numpy functions built from several lax ops."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numbax._src.core import get_aval, is_array_like
from numbax._src.dtypes import kind_of
from numbax._src.lax import elementwise as lax


def _is_weak(x: Any) -> bool:
    """Python bools, and weak bools, are strong in JAX's promotion lattice."""
    if isinstance(x, bool) or not is_array_like(x):
        return False
    aval = get_aval(x)
    return aval.weak_type and kind_of(aval.dtype) != "b"


def weak_out(fn: Callable) -> Callable:
    """Wraps fn so its outputs are weakly typed when every argument is (as JAX's are, since
    its implementations build constants like their operands); intermediates may be strong."""
    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if not args or not all(_is_weak(a) for a in args):
            return out
        mark = lambda o: lax.convert_element_type(o, get_aval(o).dtype, True)  # noqa: E731
        return tuple(map(mark, out)) if isinstance(out, tuple) else mark(out)

    return wrapped


def strong_out(fn: Callable) -> Callable:
    """Wraps fn so its output is strongly typed (JAX compares with strong constants here)."""
    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        return lax.convert_element_type(out, get_aval(out).dtype, False)

    return wrapped
