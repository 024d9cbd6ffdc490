"""jit's options: the static and donated argument specs checked and completed from the
function's signature, static values made hashable, and the executable tables jit wrappers of
one function share."""
from __future__ import annotations

import inspect
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src.compiler.cache_bounds import LRUCache
from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, UnhashableStaticArgumentError


def normalize_argnums(name: str, value: Any, api: str = "jit") -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    items = _entries(name, value, "an int or a sequence of ints", f"{name}=1 or {name}=(0, 2)",
                     api)
    for v in items:
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise NumbaxTypeError(
                f"{api}: {name} has an entry {v!r} of type {type(v).__name__}, expected int. Pass "
                f"an int or a tuple of ints, e.g. {name}=(0, 2)."
            )
    return tuple(int(v) for v in items)


def normalize_argnames(value: Any, name: str = "static_argnames") -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    items = _entries(name, value, "a string or a sequence of strings",
                     f"{name}='n' or {name}=('n', 'mode')")
    nums = name.replace("argnames", "argnums")
    for v in items:
        if not isinstance(v, str):
            raise NumbaxTypeError(
                f"jit: {name} has an entry {v!r} of type {type(v).__name__}, expected "
                f"str (a parameter name). Use {nums} for positions."
            )
    return items


def check_disjoint(static_argnames: tuple[str, ...], donate_argnames: tuple[str, ...]) -> None:
    """JAX's rule: an argument is static or donated, never both (ValueError, JAX's message)."""
    both = set(static_argnames) & set(donate_argnames)
    if both:
        raise NumbaxValueError(
            "static_argnames and donate_argnames cannot intersect. Argument names "
            f"{both} appear in both static_argnames and donate_argnames")


def warn_unusable_donations(donated: list, outs: list, stacklevel: int = 6) -> None:
    """JAX's UserWarning for donated arguments no output can take: each output takes the
    first donated argument of its shape and dtype not yet taken (as XLA pairs them)."""
    free = list(donated)
    for out in outs:
        for i, aval in enumerate(free):
            if aval.shape == out.shape and aval.dtype == out.dtype:
                del free[i]
                break
    if free:
        warnings.warn("Some donated buffers were not usable: "
                      f"{', '.join(a.str_short() for a in free)}.\n"
                      "See an explanation at https://docs.jax.dev/en/latest/faq.html"
                      "#buffer-donation.", stacklevel=stacklevel)  # the call of the function


def _entries(name: str, value: Any, expected: str, example: str, api: str = "jit") -> tuple:
    try:
        return tuple(value)
    except TypeError:
        raise NumbaxTypeError(
            f"{api}: {name} has {value!r} of type {type(value).__name__}, expected {expected}. "
            f"Pass e.g. {example}."
        ) from None


def _cache_size() -> int:
    return config.executable_cache_size


def infer_statics(fun: Callable, argnums: tuple[int, ...], argnames: tuple[str, ...],
                  what: str = "static_argnums") -> tuple[tuple[int, ...], tuple[str, ...]]:
    """static (or donated: `what`) argnums and argnames completed from each other through
    `fun`'s signature, as JAX does: a parameter is static (donated) whether it is passed by
    position or by name.
    ValueError (JAX's message) for a position past every positional parameter."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # builtins and other callables without a signature
        return argnums, argnames
    kinds = inspect.Parameter
    if not any(p.kind is kinds.VAR_POSITIONAL for p in params):
        positional = sum(p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
                         for p in params)
        for i in argnums:
            if not -positional <= i < positional:
                raise NumbaxValueError(
                    f"Jitted function has {what}={argnums}, but only accepts "
                    f"{positional} positional arguments.")
    both = [(i, p.name) for i, p in enumerate(params)
            if p.kind is kinds.POSITIONAL_OR_KEYWORD]
    nums = set(argnums) | {i for i, name in both if name in argnames}
    names = list(argnames) + [name for i, name in both if i in argnums and name not in argnames]
    return tuple(sorted(nums)), tuple(names)


# The executable and fast-path tables of every jitted function, shared by jit wrappers of one
# function with the same options (weakly keyed: they go with the function).
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def shared_tables(fun: Callable, options: tuple | None) -> tuple[LRUCache, ...]:
    """(executables, fast paths, tree fast paths, GPU fast paths, host-value fast paths (flat
    or pytrees)) for a new jit of `fun`."""
    def fresh():
        return tuple(LRUCache(_cache_size) for _ in range(5))

    if options is None:
        return fresh()
    try:
        per_fun = _SHARED.setdefault(fun, {})
        return per_fun.setdefault(options, fresh())
    except TypeError:  # not weakly referenceable or not hashable: a table of its own
        return fresh()


def clear_shared_tables() -> None:
    """Empties every shared table (clear_caches): they outlive the jit wrappers that made them."""
    for per_fun in list(_SHARED.values()):
        for tables in per_fun.values():
            for table in tables:
                table.clear()


def hashable_static(fun_name: str, what: str, value: Any) -> Any:
    try:
        hash(value)
    except TypeError as e:
        raise UnhashableStaticArgumentError(
            f"jit: static {what} of {fun_name} has type {type(value).__name__}, which is not "
            f"hashable ({e}); non-hashable static arguments are not supported. Use a tuple "
            "instead of a list, or pass arrays as non-static arguments."
        ) from None
    return value
