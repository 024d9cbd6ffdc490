"""numbax.dlpack (jax.dlpack): Arrays from DLPack producers' CPU buffers."""
from __future__ import annotations

from typing import Any

from numbax._src.numpy.array_io import dlpack_array
from numbax._src.numpy.array_io import is_dlpack_dtype as is_supported_dtype  # noqa: F401


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Any:
    """An Array from an object with __dlpack__ and __dlpack_device__: a copy unless
    copy=False, which gives a read-only view of the producer's buffer.

    >>> import numpy as np
    >>> from_dlpack(np.arange(3.0))
    Array([0., 1., 2.], dtype=float64)
    """
    return dlpack_array("numbax.dlpack.from_dlpack", external_array, device, copy)
