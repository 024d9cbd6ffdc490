"""numbax.scipy.cluster.vq: vector quantization against a code book."""
from __future__ import annotations

from typing import Any

from numbax._src import core
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.numpy import lax_numpy, reductions, ufuncs

__all__ = ["vq"]


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """Assigns each observation the nearest code (Euclidean distance).

    Args:
      obs: observations (M,) or (M, N).
      code_book: codes (K,) or (K, N), of obs' rank.
      check_finite: unused (as in JAX).

    Returns:
      (code, dist): the index of the nearest code for each observation and its distance.

    >>> import numpy as np
    >>> [v.tolist() for v in vq(np.array([0.1, 2.2]), np.array([0.0, 2.0]))]
    [[0, 1], [0.1, 0.20000000000000018]]
    """
    for name, value in (("obs", obs), ("code_book", code_book)):
        if not (isinstance(value, (list, tuple)) or core.is_array_like(value)):
            raise NumbaxTypeError(
                f"numbax.scipy.cluster.vq.vq: {name} has type {type(value).__name__}, "
                "expected an array.")
    obs, code_book = ufuncs.promote_dtypes_inexact(
        "scipy.cluster.vq.vq", lax_numpy.asarray(obs), lax_numpy.asarray(code_book))
    if obs.ndim != code_book.ndim:
        raise NumbaxValueError(
            f"numbax.scipy.cluster.vq.vq: obs has rank {obs.ndim} and code_book rank "
            f"{code_book.ndim}; they must have the same rank.")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise NumbaxValueError(
            f"numbax.scipy.cluster.vq.vq: obs has rank {obs.ndim}; only ranks 1 and 2 are "
            "supported.")
    diff = obs[:, None, :] - code_book[None, :, :]
    dist = ufuncs.sqrt(reductions.sum(diff * diff, axis=-1))
    code = reductions.argmin(dist, axis=-1)
    return code, reductions.min(dist, axis=-1)
