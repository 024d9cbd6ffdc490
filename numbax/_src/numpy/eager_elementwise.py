"""Eager elementwise calls on host arrays, straight to their numpy implementations.

An eager `x * 0.5` went through the ufunc object, dtype promotion, broadcasting, lax's operand
rules, `core.bind` (finding the top trace, raising the operands to it) and
`dispatch.apply_primitive` (abstract evaluation, the implementation, wrapping): ~28 us on the
2-core VM where JAX's eager multiply takes ~9 and numpy's own work ~2. Where nothing is being
traced and the operands are host Arrays of one integer or float dtype with Python scalars
beside them (the case `operands._one_dtype` answers without the promotion lattice), each of
those steps is known in advance: the scalar becomes the array's dtype
(`dtypes.python_scalar_value`, with its overflow errors), the shapes are equal or one is a
scalar, and the output's dtype and weak type are what the primitive's abstract evaluation gives
for those operand types (asked once per primitive, dtype, weak type and trace context). So the
primitive's implementation (`core.impl_rules`, numpy's error state quiet) runs directly and its
result is wrapped as apply_primitive wraps it.

Any other call returns None and takes the general path, which also raises every error: an
operand that is a tracer, a numpy array, a bool, complex or bfloat16 value, a sharded or GPU
array; two shapes that broadcast; an abstract evaluation that refuses the dtype; a staging trace
(inside jit even Arrays' operations are staged); jax_debug_nans or jax_debug_infs on.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.array import Array
from numbax._src.avals import ShapedArray
from numbax._src.config import config
from numbax._src.core import Primitive
from numbax._src.numpy.operands import _one_dtype

_OUT_TYPES: dict[tuple, tuple[np.dtype, bool] | None] = {}
OUT_TYPES_SIZE = 1024


def binary(primitive: Primitive, x1: Any, x2: Any, kinds: str = "iuf") -> Array | None:
    """primitive(x1, x2) as the numpy function in front of it gives it (promoted, broadcast)
    where the operands' common dtype is of one of `kinds` (true_divide: floats only, since
    integers divide as floats there), or None where the general path must run."""
    if not _eager_host(x1, x2):
        return None
    found = _one_dtype((x1, x2))
    if found is None or found[0].kind not in kinds:
        return None
    dtype, weak = found
    a, b = _host_value(x1, dtype), _host_value(x2, dtype)
    if a.shape != b.shape and a.ndim and b.ndim:
        return None  # (broadcasting two shapes: broadcast_arrays' rank-promotion rules)
    return _run(primitive, (a, b), dtype, weak)


def unary(primitive: Primitive, x: Any, kinds: str) -> Array | None:
    """primitive(x) for a strongly typed host Array of one of `kinds`, those whose dtype the
    numpy function keeps and hands to the primitive (math functions: floats, since integers
    become floats first), else None."""
    if type(x) is not Array or x._weak_type or not _eager_host(x):
        return None
    value = x._value
    if value.dtype.kind not in kinds:
        return None
    return _run(primitive, (value,), value.dtype, False)


def _eager_host(*operands: Any) -> bool:
    """Whether operations on these operands run eagerly on the host now: no staging trace, at
    least one host Array, the rest Arrays or Python ints and floats, NaN checks off."""
    if not core.evaluates_eagerly() or config.hot("jax_debug_nans") or config.hot(
            "jax_debug_infs"):
        return False
    arrays = 0
    for x in operands:
        kind = type(x)
        if kind is Array:
            arrays += 1
        elif kind is not int and kind is not float:
            return False
    return arrays > 0


def _host_value(x: Any, dtype: np.dtype) -> np.ndarray:
    return x._value if type(x) is Array else dtypes.python_scalar_value(x, dtype)


def _run(primitive: Primitive, values: tuple, dtype: np.dtype, weak: bool) -> Array | None:
    out_type = _out_type(primitive, dtype, weak, len(values))
    if out_type is None:
        return None
    out_dtype, out_weak = out_type
    (out,) = core.impl_rules[primitive](*values)
    out = np.asarray(out)
    if out.dtype != out_dtype:
        out = out.astype(out_dtype)
    return Array._from_numpy(out, out_weak)


def _out_type(primitive: Primitive, dtype: np.dtype, weak: bool,
              nin: int) -> tuple[np.dtype, bool] | None:
    """The output's (dtype, weak type) for operands of (dtype, weak), or None where the
    primitive's abstract evaluation refuses them (the general path then raises its error)."""
    key = (primitive, dtype, weak, config.trace_context())
    try:
        return _OUT_TYPES[key]
    except KeyError:
        pass
    try:
        (aval,) = core.abstract_eval(primitive, [ShapedArray((), dtype, weak)] * nin, {})
        found = (aval.dtype, aval.weak_type)
    except (TypeError, ValueError):
        found = None
    if len(_OUT_TYPES) >= OUT_TYPES_SIZE:
        _OUT_TYPES.clear()
    _OUT_TYPES[key] = found
    return found
