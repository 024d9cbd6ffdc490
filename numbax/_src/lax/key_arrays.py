"""Typed key arrays through structural functions: one dispatch, `key_array_op`, runs a function
on each uint32 word of the key data and rebuilds keys from the results.

A key array of shape s holds uint32[*s, 2] data, i.e. two uint32[*s] words. A function that only
moves elements (reshape, stack, where, take, indexing, ...) commutes with taking a word, so
`f(keys)` is `f(word 0)` and `f(word 1)` joined back into keys: axes, broadcasting and indices
mean what they mean on the key shape, as in JAX, where such ops move the key data.
`==` and `!=` join the words' answers with and / or. Stands alone (imports no lax module at
import time) because lax's own shape functions and numpy's both wear the decorator.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from numbax._src.errors import NumbaxDTypeError, NumbaxTypeError

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_SUPPORTED = ("structural functions only: reshape, ravel, stack, concatenate, where, take, "
              "indexing and .at[].set, transpose, flip, roll, tile, repeat, broadcast_to, "
              "zeros_like, == and !=")


# Whether a key array has been made in this process: until then no argument can be one, and
# the wrappers below skip their scan (jnp.stack of two vectors passed through 15 of them, a
# fifth of its 68 us eager call on the VM).
keys_made = False


class KeyArrayBase:
    """What key_array_op asks of a typed key array (prng.PRNGKeyArray is the one subclass):
    its words (uint32 arrays of the key shape) and the way back from words to keys."""

    __slots__ = ()
    num_words = 2

    def __new__(cls, *args: Any, **kwargs: Any) -> KeyArrayBase:
        global keys_made  # (every way to a key array, unpickling and copies too, passes here)
        keys_made = True
        return super().__new__(cls)

    def _word(self, i: int) -> Any:
        raise NotImplementedError

    @classmethod
    def _from_words(cls, words: Sequence[Any]) -> KeyArrayBase:
        raise NotImplementedError


def unsupported(api: str, arg: str = "an argument") -> NumbaxTypeError:
    """The error for a key array passed where JAX refuses one (arithmetic, reductions, ...)."""
    return NumbaxTypeError(
        f"{api}: {arg} has dtype key<fry> (a key array), expected a numeric array; key arrays "
        f"support {_SUPPORTED}. Use numbax.random.key_data(keys) for their uint32 data."
    )


def refuse_key(api: str, x: Any, arg: str = "an argument") -> None:
    """Raises `unsupported` if x is a key array (a numeric-only function's front door)."""
    if isinstance(x, KeyArrayBase):
        raise unsupported(api, arg)


def refuses_keys(*params: str) -> Callable[[Callable], Callable]:
    """Makes a numeric-only numpy function refuse key arrays in `params` (arrays or sequences
    of them) with `unsupported`, a TypeError naming the parameter, as JAX refuses them."""
    def wrap(fn: Callable) -> Callable:
        names = list(inspect.signature(fn).parameters)
        where = [(p, names.index(p)) for p in params]
        api = f"numbax.numpy.{fn.__name__}"

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if keys_made:
                for p, i in where:
                    v = args[i] if i < len(args) else kwargs.get(p)
                    if _has_key(v if isinstance(v, (list, tuple)) else (v,)):
                        raise unsupported(api, p)
            return fn(*args, **kwargs)

        return wrapper

    return wrap


def _has_key(values: Any) -> bool:
    for v in values:
        if isinstance(v, KeyArrayBase):
            return True
        if isinstance(v, (list, tuple)) and _has_key(v):
            return True
    return False


def _collect(value: Any, found: list, others: list) -> None:
    """Key arrays into `found`; other non-None leaves (arrays, scalars) into `others`."""
    if isinstance(value, KeyArrayBase):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, found, others)
    elif value is not None:
        others.append(value)


def _substitute(value: Any, i: int) -> Any:
    if isinstance(value, KeyArrayBase):
        return value._word(i)
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, i) for v in value)
    return value


def _combine(mode: str, outs: list, cls: type) -> Any:
    """One output from the per-word outputs: keys again, or the words' booleans joined."""
    first = outs[0]
    if isinstance(first, (list, tuple)):
        return type(first)(_combine(mode, [o[j] for o in outs], cls) for j in range(len(first)))
    if mode == "keys":
        return cls._from_words(outs)
    from numbax._src.lax import elementwise as ew

    join = ew.bitwise_and if mode == "all" else ew.bitwise_or
    return functools.reduce(join, outs)


class _Spec:
    """How one function takes key arrays (see key_array_op)."""

    def __init__(self, fn: Callable, keys: tuple, fills: tuple, combine: str, like: bool,
                 allowed: Mapping[str, tuple], api: str | None) -> None:
        self.sig = inspect.signature(fn)
        self.keys, self.fills, self.combine, self.like = keys, fills, combine, like
        self.allowed = dict(allowed)
        self.api = api or _api_name(fn)
        names = keys + fills
        params = list(self.sig.parameters.values())
        unknown = set(names) - {p.name for p in params}
        assert not unknown, f"key_array_op: {fn.__name__} has no parameter {unknown}"
        self.positions = tuple(i for i, p in enumerate(params)
                               if p.name in names and p.kind in _POSITIONAL)
        self.names = names
        self.var = next((i for i, p in enumerate(params)
                         if p.name in names and p.kind == inspect.Parameter.VAR_POSITIONAL),
                        None)

    def candidates(self, args: tuple, kwargs: dict) -> list:
        out = [args[i] for i in self.positions if i < len(args)]
        out += [kwargs[n] for n in self.names if n in kwargs]
        if self.var is not None:
            out += args[self.var:]
        return out


def _api_name(fn: Callable) -> str:
    module = getattr(fn, "__module__", "") or ""
    family = "numbax.lax" if "._src.lax." in module else "numbax.numpy"
    return f"{family}.{fn.__name__}"


def _call_word(fn: Callable, spec: _Spec, arguments: dict, i: int) -> Any:
    args = dict(arguments)
    for name in spec.names:
        if name in args:
            args[name] = _substitute(args[name], i)
    bound = inspect.BoundArguments(spec.sig, args)  # type: ignore[arg-type]
    return fn(*bound.args, **bound.kwargs)


def _dispatch(fn: Callable, spec: _Spec, args: tuple, kwargs: dict) -> Any:
    arguments = spec.sig.bind(*args, **kwargs).arguments
    found: list = []
    others: dict[str, list] = {}
    for name in spec.keys:
        others[name] = []
        _collect(arguments.get(name), found, others[name])
    fill_keys: list = []
    for name in spec.fills:
        _collect(arguments.get(name), fill_keys, [])
    if not found and not fill_keys:
        return fn(*args, **kwargs)  # a key in a non-key argument: fn's own error
    mixed = next((n for n, v in others.items() if v), None) if found else None
    if mixed is not None:
        what = type(others[mixed][0]).__name__
        raise NumbaxDTypeError(  # JAX: ValueError (promotion) or TypeError (==), so both
            f"{spec.api}: {mixed} has type {what} while another operand is a key array (dtype "
            "key<fry>), expected key arrays for all of them. Wrap raw uint32 key data with "
            "numbax.random.wrap_key_data."
        )
    for param, ok in spec.allowed.items():
        value = arguments.get(param, spec.sig.parameters[param].default)
        if value not in ok:
            raise NumbaxTypeError(
                f"{spec.api}: {param} is {value!r} with a key array (dtype key<fry>), expected "
                f"{param} in {ok}. Use numbax.random.key_data(keys) for their uint32 data."
            )
    if spec.like and arguments.get("dtype") is not None:
        return _call_word(fn, spec, arguments, 0)  # a numeric array of the key shape
    cls = type((found or fill_keys)[0])
    outs = [_call_word(fn, spec, arguments, i) for i in range(cls.num_words)]
    return _combine(spec.combine, outs, cls)


def key_array_op(*keys: str, fills: tuple[str, ...] = (), combine: str = "keys",
                 like: bool = False, allowed: Mapping[str, tuple] | None = None,
                 api: str | None = None) -> Callable[[Callable], Callable]:
    """Lets `fn` take typed key arrays in its parameters `keys` (arrays or sequences of them).

    With no key array among them, `fn` runs as is (one isinstance scan). Otherwise all of
    `keys`' non-None values must be key arrays (JAX refuses mixing keys and numbers), and `fn`
    runs once per key word, its outputs joined by `combine`: "keys" (rebuild key arrays, over
    lists/tuples of outputs), "all" or "any" (booleans, for == and !=). `fills` are parameters
    that may be keys or numbers (full_like's fill_value). `like` marks *_like functions, whose
    explicit dtype gives a numeric array of the key shape; `allowed` maps a parameter to the
    values it may take with keys (e.g. dtype=(None,)).
    """
    assert combine in ("keys", "all", "any"), combine

    def wrap(fn: Callable) -> Callable:
        spec = _Spec(fn, keys, fills, combine, like, allowed or {}, api)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not keys_made or not _has_key(spec.candidates(args, kwargs)):
                return fn(*args, **kwargs)
            return _dispatch(fn, spec, args, kwargs)

        return wrapper

    return wrap
