"""Sparse constructors under jax.experimental.sparse's names: empty, eye (either format),
random_bcoo (JAX's key use, so its draws match JAX's bits), and todense for any operand."""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import api, dtypes, jnp
from numbax._src.errors import NumbaxValueError
from numbax._src.random import uniform
from numbax._src.random_discrete import choice
from numbax._src.random_keys import split
from numbax._src.sparse.bcoo import BCOO, bcoo_empty, bcoo_eye, check_layout
from numbax._src.sparse.bcsr import BCSR


def _format(api_name: str, sparse_format: str) -> type:
    formats = {"bcoo": BCOO, "bcsr": BCSR}
    if sparse_format not in formats:
        raise NumbaxValueError(f"{api_name}: sparse_format is {sparse_format!r}, expected "
                               "'bcoo' or 'bcsr'.")
    return formats[sparse_format]


def empty(shape: Sequence[int], dtype: Any = None, index_dtype: Any = "int32",
          sparse_format: str = "bcoo", **kwds: Any) -> Any:
    """An all-zero sparse array (nse=0) of `shape`.

    >>> empty((3, 4))
    BCOO(float64[3, 4], nse=0)
    """
    cls = _format("empty", sparse_format)
    mat = bcoo_empty(shape, dtype, index_dtype, **kwds)
    return mat if cls is BCOO else BCSR.from_bcoo(mat)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None,  # noqa: N803
        index_dtype: Any = "int32", sparse_format: str = "bcoo", **kwds: Any) -> Any:
    """The N x M sparse identity, ones on diagonal k.

    >>> eye(3, k=1).indices.tolist()
    [[0, 1], [1, 2]]
    """
    cls = _format("eye", sparse_format)
    mat = bcoo_eye(N, M, k, dtype, index_dtype, **kwds)
    return mat if cls is BCOO else BCSR.from_bcoo(mat)


def random_bcoo(key: Any, shape: Sequence[int], *, dtype: Any = np.float64,
                indices_dtype: Any = None, nse: float | int = 0.2, n_batch: int = 0,
                n_dense: int = 0, unique_indices: bool = True, sorted_indices: bool = False,
                generator: Callable[..., Any] = uniform, **kwds: Any) -> BCOO:
    """A random BCOO: nse positions per batch drawn by random.choice over the sparse
    positions (without replacement when unique_indices), values from `generator`.

    Args:
      key: a PRNG key; split into one key for the data and one per batch element, as JAX.
      shape: the array's shape.
      dtype: the data dtype (canonicalized: float32 with jax_enable_x64 off).
      indices_dtype: the index dtype (the default int dtype).
      nse: the count per batch element, or for 0 < nse < 1 that fraction of the sparse size.
      n_batch, n_dense: the layout.
      unique_indices, sorted_indices: whether positions are distinct, and sorted.
      generator: (key, shape, dtype, **kwds) -> values; random.uniform by default.

    >>> import numbax
    >>> random_bcoo(numbax.random.key(0), (3, 4), nse=0.5)
    BCOO(float64[3, 4], nse=6)
    """
    shape = tuple(map(operator.index, shape))
    n_batch, n_dense = check_layout("random_bcoo", len(shape), n_batch, n_dense)
    n_sparse = len(shape) - n_batch - n_dense
    batch, sparse = shape[:n_batch], shape[n_batch:n_batch + n_sparse]
    dense = shape[n_batch + n_sparse:]
    sparse_size = math.prod(sparse)
    if not 0 <= nse < sparse_size:
        raise NumbaxValueError(f"random_bcoo: nse is {nse}, expected 0 <= nse < {sparse_size} "
                               "(the number of sparse positions).")
    if 0 < nse < 1:
        nse = int(math.ceil(nse * sparse_size))
    nse = operator.index(nse)
    indices_dtype = np.dtype(indices_dtype or dtypes.default_int_dtype())
    if sparse_size > np.iinfo(indices_dtype).max:
        raise NumbaxValueError(f"random_bcoo: indices_dtype {indices_dtype} cannot hold the "
                               f"{sparse_size} sparse positions.")

    def one_indices(k: Any) -> Any:
        if not sparse:
            return jnp.zeros((nse, n_sparse), indices_dtype)
        flat = choice(k, sparse_size, shape=(nse,), replace=not unique_indices)
        return jnp.stack(jnp.unravel_index(flat.astype(indices_dtype), sparse), axis=1)

    keys = split(key, math.prod(batch) + 1)
    data = generator(keys[0], shape=batch + (nse,) + dense, dtype=dtype, **kwds)
    indices = api.vmap(one_indices)(keys[1:]).reshape(batch + (nse, n_sparse))
    mat = BCOO((data, indices.astype(indices_dtype)), shape=shape,
               unique_indices=unique_indices)
    return mat.sort_indices() if sorted_indices else mat


def todense(arr: Any) -> Any:
    """The dense array of a BCOO or BCSR; any other array is returned as it is."""
    return arr.todense() if isinstance(arr, (BCOO, BCSR)) else jnp.asarray(arr)
