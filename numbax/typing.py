"""numbax.typing: the annotation types of jax.typing (ArrayLike, DTypeLike)."""
from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from numbax._src.basearray import Array


@runtime_checkable
class SupportsDType(Protocol):
    """Anything with a dtype attribute (arrays, numpy scalar types)."""

    @property
    def dtype(self) -> Any: ...


# Arrays and the scalars numbax accepts wherever an array goes. isinstance works with it.
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]  # noqa: UP007

# What numbax accepts as a dtype: a name, a scalar type, a numpy dtype, or an object with a
# dtype. For annotations only (it holds type[Any], which isinstance cannot check).
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]  # noqa: UP007

__all__ = ["ArrayLike", "DTypeLike"]
