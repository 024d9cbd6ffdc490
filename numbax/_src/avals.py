"""Abstract values: ShapedArray (shape, dtype, weak type), what tracing knows of an array. A leaf
below the core (it imports only dtypes), re-exported as core.ShapedArray."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes

# The sharding of an aval without one (JAX's NamedSharding of the empty mesh), installed by
# numbax._src.sharding.shardings; avals sit below it.
trivial_sharding: Any = None


class ShapedArray:
    """The abstract value of an array: shape, dtype, whether its dtype is weak (NEP 50) and,
    in explicit-sharding mode, its sharding over the explicit mesh axes (`_sharding`, a
    NamedSharding; None when no dimension is sharded over an explicit axis)."""

    __slots__ = ("shape", "dtype", "weak_type", "_sharding")
    array_abstraction_level = 1

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False,
                 sharding: Any = None) -> None:
        self.shape = tuple(map(operator.index, shape))
        self.dtype = dtype if dtypes.is_extended_dtype(dtype) else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @property
    def sharding(self) -> Any:
        """The NamedSharding of this type (JAX's aval.sharding)."""
        if self._sharding is None and trivial_sharding is not None:
            return trivial_sharding(self.ndim)
        return self._sharding

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        same_shape = shape is None or tuple(shape) == self.shape
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
            self._sharding if same_shape else None,
        )

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def str_short(self) -> str:
        dims = [str(d) for d in self.shape]
        if self._sharding is not None:  # explicit axes: f32[8@X,4@(Y,Z)]
            for i, entry in enumerate(self._sharding.spec):
                names = entry if isinstance(entry, tuple) else (entry,)
                names = [n for n in names if n is not None]
                if names:
                    dims[i] += "@" + (names[0] if len(names) == 1 else f"({','.join(names)})")
        return f"{dtypes.short_name(self.dtype)}[{','.join(dims)}]"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
            and self._sharding == other._sharding
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type, self._sharding))

    def _long(self) -> str:
        """JAX's printed type: the dtype's full name (`float32[3,2]`), sharded dims as in
        str_short."""
        short, dtype = self.str_short(), self.dtype
        numeric = isinstance(dtype, np.dtype) and (  # else key<...>, float0
            dtype.kind in "biufc" or dtype == dtypes.bfloat16)
        name = dtype.name if numeric else short[:short.index("[")]
        return name + short[short.index("["):]

    def __str__(self) -> str:  # JAX's: `float32[3,2]`, a weak type marked `~int32[]`
        return ("~" if self.weak_type else "") + self._long()

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self._long()}{weak})"


def raise_to_shaped(aval: ShapedArray, weak_type: bool | None = None) -> ShapedArray:
    return aval if weak_type is None else aval.update(weak_type=weak_type)


def literal_value(val: Any, aval: ShapedArray) -> Any:
    """The value eval_jaxpr binds for a literal: a weak one as a Python scalar (as JAX keeps
    it), so equations a transform re-traces from it stay weakly typed."""
    if aval.weak_type and aval.shape == ():
        scalar = val.item()
        if isinstance(scalar, (bool, int, float, complex)) and \
                dtypes.python_scalar_dtype(scalar) == aval.dtype:
            return scalar
    return val
