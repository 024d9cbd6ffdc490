"""Abstract values: ShapedArray (shape, dtype, weak type), what tracing knows of an array. A leaf
below the core (it imports only dtypes), re-exported as core.ShapedArray."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes


class ShapedArray:
    """The abstract value of an array: shape, dtype and whether its dtype is weak (NEP 50)."""

    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False) -> None:
        self.shape = tuple(operator.index(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(str(d) for d in self.shape)}]"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"


def raise_to_shaped(aval: ShapedArray, weak_type: bool | None = None) -> ShapedArray:
    return aval if weak_type is None else aval.update(weak_type=weak_type)
