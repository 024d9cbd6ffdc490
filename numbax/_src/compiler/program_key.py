"""Structural keys of programs, so a program traced again is not compiled again.

An eager `fori_loop` or `scan` traces its body anew at every call, and so does `jit` of a
fresh lambda; rendering the same program's generated source again cost ~1.5 ms a call (the
modules themselves were already loaded, keyed by their source). `key(closed)` is equal for
two programs exactly when they compute the same thing: variables numbered in order of
definition, avals, literals and scalar params by type and bits (0.0 and -0.0, 1 and True
differ), arrays by dtype, shape and bytes, nested jaxprs recursively, and objects it cannot
look inside (primitives, functions, enums) by identity. A program with consts gets no key
(None): consts are the user's arrays, which may change in place after the trace, and keying
large ones by value would cost what it saves. Any part without a key poisons the whole.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from numbax._src.avals import ShapedArray
from numbax._src.compiler import registry
from numbax._src.core import ClosedJaxpr, Jaxpr, Literal, Var

MAX_ARRAY_BYTES = 1 << 16  # a param array keyed by value up to this size; larger: no key


class _NoKey(Exception):
    """Some part of the program has no structural key."""


class _Same:
    """An object compared by identity (held, so its id is not reused while keyed)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def key(closed: ClosedJaxpr) -> tuple | None:
    """The program's structural key, or None where it has consts or a part without one."""
    try:
        return _closed_key(closed)
    except _NoKey:
        return None


def _closed_key(closed: ClosedJaxpr) -> tuple:
    if closed.consts:
        raise _NoKey
    return _jaxpr_key(closed.jaxpr)


def _jaxpr_key(jaxpr: Jaxpr) -> tuple:
    numbers: dict[int, int] = {}

    def define(v: Var) -> tuple:
        numbers[id(v)] = len(numbers)
        return _aval_key(v.aval)

    def read(x: Any) -> Any:
        if isinstance(x, Literal):
            return ("lit", _value_key(x.val), _aval_key(x.aval))
        number = numbers.get(id(x))
        if number is None:
            raise _NoKey  # (a free variable: not a closed program)
        return number

    parts: list[Any] = [tuple(define(v) for v in jaxpr.constvars),
                        tuple(define(v) for v in jaxpr.invars)]
    for eqn in jaxpr.eqns:
        ins = tuple(read(x) for x in eqn.invars)  # (read before the outputs are defined)
        # a call-like equation's derivative rules (custom_jvp's jvp, custom_vjp's fwd and
        # bwd: functions made anew at every trace) are not part of the compiled program:
        # compile inlines its jaxpr (inline.py) and its eager impl evaluates that jaxpr
        call = registry.inline_param(eqn.primitive) is not None
        params = tuple((name, _value_key(value)) for name, value in sorted(eqn.params.items())
                       if not (call and callable(value) and not isinstance(value, type)))
        parts.append((_Same(eqn.primitive), ins, params, tuple(define(v) for v in eqn.outvars)))
    parts.append(tuple(read(x) for x in jaxpr.outvars))
    return tuple(parts)


def _aval_key(aval: Any) -> Any:
    if type(aval) is ShapedArray:
        return aval  # (its equality compares shape, dtype, weak type and sharding)
    return _Same(aval)


def _value_key(value: Any) -> Any:
    """A param's or literal's key: equal only for values a lowering cannot tell apart."""
    kind = type(value)
    if value is None or kind is str:
        return value
    if kind in (bool, int):
        return (kind, value)
    if kind in (float, complex):
        return (kind, np.asarray(value).tobytes())
    if isinstance(value, np.generic):
        return ("np", value.dtype.str, value.tobytes())
    if isinstance(value, np.ndarray):
        if value.nbytes > MAX_ARRAY_BYTES or value.dtype.hasobject:
            raise _NoKey
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.dtype):
        return ("dtype", value)
    if kind in (tuple, list) or isinstance(value, tuple):  # NamedTuples keep their type
        return (kind, tuple(_value_key(v) for v in value))
    if kind is dict:
        try:
            items = sorted(value.items())
        except TypeError:  # (keys that do not sort)
            raise _NoKey from None
        return (dict, tuple((_value_key(k), _value_key(v)) for k, v in items))
    if kind is frozenset:
        return (frozenset, frozenset(_value_key(v) for v in value))
    if kind is ClosedJaxpr:
        return ("closed", _closed_key(value))
    if kind is Jaxpr:
        return ("jaxpr", _jaxpr_key(value))
    if kind is ShapedArray:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (kind, tuple(_value_key(getattr(value, f.name))
                            for f in dataclasses.fields(value)))
    return _Same(value)
