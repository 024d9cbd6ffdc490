"""The BCSR array (jax.experimental.sparse.BCSR): compressed rows over optional batch and dense
dimensions. It computes through the BCOO of the same entries (rows read off indptr with a
searchsorted), so its products compose with jit, grad and vmap as BCOO's do.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, jnp
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.ops import segment_sum
from numbax._src.sparse.bcoo import BCOO, _static_int, bcoo_fromdense, per_batch
from numbax._src.tree_registration import register_pytree_node


class BCSR:
    """A batched compressed-sparse-row array, as jax.experimental.sparse.BCSR.

    Args:
      args: (data, indices, indptr): data of shape batch + (nse,) + dense, column indices of
        shape batch + (nse,), row pointers of shape batch + (rows + 1,).
      shape: the dense shape (batch dims, rows, columns, dense dims).

    >>> import numbax.numpy as jnp
    >>> m = BCSR.fromdense(jnp.array([[0., 1.], [2., 3.]], dtype=jnp.float32))
    >>> m, m.indptr.tolist(), (m @ jnp.ones(2, jnp.float32)).tolist()
    (BCSR(float32[2, 2], nse=3), [0, 1, 3], [1.0, 5.0])
    """

    __array_priority__ = 100.0
    __array_ufunc__ = None

    def __init__(self, args: tuple, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False) -> None:
        if not isinstance(args, (tuple, list)) or len(args) != 3:
            raise NumbaxTypeError(f"BCSR: args is a {type(args).__name__}, expected the triple "
                                  "(data, indices, indptr).")
        data, indices, indptr = (jnp.asarray(a) for a in args)
        shape = tuple(_static_int("BCSR", "shape", d) for d in shape)
        n_batch = indices.ndim - 1
        n_dense = len(shape) - n_batch - 2
        if n_batch < 0 or n_dense < 0 or data.ndim != n_batch + 1 + n_dense:
            raise NumbaxValueError(f"BCSR: data has shape {data.shape} and indices "
                                   f"{indices.shape}, expected batch + (nse,) + dense and "
                                   f"batch + (nse,) for shape {shape}.")
        if tuple(indptr.shape) != shape[:n_batch] + (shape[n_batch] + 1,):
            raise NumbaxValueError(f"BCSR: indptr has shape {indptr.shape}, expected "
                                   f"{shape[:n_batch] + (shape[n_batch] + 1,)}.")
        if data.shape[n_batch] != indices.shape[n_batch]:
            raise NumbaxValueError(f"BCSR: data has nse={data.shape[n_batch]} and indices "
                                   f"nse={indices.shape[n_batch]}, expected equal.")
        self.data, self.indices, self.indptr = data, indices, indptr
        self._sparse_shape = shape[n_batch:n_batch + 2]
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)

    n_batch = property(lambda self: self.indices.ndim - 1)
    n_sparse = property(lambda self: 2)
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)
    nse = property(lambda self: self.indices.shape[-1])
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @property
    def shape(self) -> tuple[int, ...]:
        nb = self.n_batch
        return (tuple(self.indices.shape[:nb]) + tuple(self._sparse_shape)
                + tuple(self.data.shape[nb + 1:]))

    def __repr__(self) -> str:
        extra = "".join(f", {name}={n}" for name, n in
                        (("n_batch", self.n_batch), ("n_dense", self.n_dense)) if n)
        dims = ", ".join(map(str, self.shape))
        return f"BCSR({np.dtype(self.dtype).name}[{dims}], nse={self.nse}{extra})"

    def tree_flatten(self) -> tuple[tuple, tuple]:
        return (self.data, self.indices, self.indptr), (self._sparse_shape, self.indices_sorted,
                                                        self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux: tuple, children: Sequence[Any]) -> BCSR:
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        if isinstance(obj.indices, core.Tracer) and obj.indices.ndim < 1:
            raise NumbaxValueError("vmap: a BCSR argument has n_batch=0, expected a batch "
                                   "dimension at the mapped axis; use in_axes=None.")
        obj._sparse_shape, obj.indices_sorted, obj.unique_indices = aux
        return obj

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                  n_dense: int = 0, n_batch: int = 0) -> BCSR:
        """The BCSR of a dense array (see bcsr_fromdense)."""
        return bcsr_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                              index_dtype=index_dtype)

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> BCSR:
        """The BCSR of a BCOO with two sparse dimensions (its entries sorted by row first)."""
        if not isinstance(arr, BCOO) or arr.n_sparse != 2:
            raise NumbaxValueError(f"BCSR.from_bcoo: arr is {arr!r}, expected a BCOO with "
                                   "n_sparse=2.")
        arr = arr if arr.indices_sorted else arr.sort_indices()
        n_rows, n_cols = arr.shape[arr.n_batch:arr.n_batch + 2]

        def one(indices: Any) -> tuple[Any, Any]:
            rows, cols = indices[:, 0], indices[:, 1]
            pad = (rows < 0) | (rows >= n_rows) | (cols < 0) | (cols >= n_cols)
            rows = jnp.where(pad, n_rows, rows)
            counts = segment_sum(jnp.ones_like(rows), rows, num_segments=n_rows)
            indptr = jnp.concatenate([jnp.zeros((1,), rows.dtype), jnp.cumsum(counts)])
            return jnp.where(pad, n_cols, cols), indptr.astype(indices.dtype)

        indices, indptr = per_batch(one, arr.n_batch)(arr.indices)
        return cls((arr.data, indices, indptr), shape=arr.shape, indices_sorted=True,
                   unique_indices=arr.unique_indices)

    def to_bcoo(self) -> BCOO:
        """The BCOO of the same entries (entries past indptr[-1] are padding)."""
        n_rows, n_cols = self._sparse_shape

        def one(indices: Any, indptr: Any) -> Any:
            k = jnp.arange(indices.shape[0], dtype=indptr.dtype)
            rows = jnp.searchsorted(indptr, k, side="right") - 1
            pad = k >= indptr[-1]
            rows = jnp.where(pad, n_rows, rows).astype(indices.dtype)
            cols = jnp.where(pad, n_cols, indices)
            return jnp.stack([rows, cols], axis=-1)

        indices = per_batch(one, self.n_batch)(self.indices, self.indptr)
        return BCOO((self.data, indices), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    def todense(self) -> Any:
        """The dense array."""
        return self.to_bcoo().todense()

    def block_until_ready(self) -> BCSR:
        return self

    def __matmul__(self, other: Any) -> Any:
        return self.to_bcoo() @ (other.to_bcoo() if isinstance(other, BCSR) else other)

    def __rmatmul__(self, other: Any) -> Any:
        return other @ self.to_bcoo()


register_pytree_node(BCSR, BCSR.tree_flatten, BCSR.tree_unflatten)


def bcsr_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCSR:
    """The BCSR array of a dense one (nse as in bcoo_fromdense: static under jit).

    >>> import numbax.numpy as jnp
    >>> bcsr_fromdense(jnp.array([[0., 2.], [0., 0.]]), nse=2).indices.tolist()
    [1, 2]
    """
    mat = jnp.asarray(mat)
    if mat.ndim - n_batch - n_dense != 2:
        raise NumbaxValueError(f"bcsr_fromdense: mat has {mat.ndim} dimensions with n_batch="
                               f"{n_batch} and n_dense={n_dense}, expected 2 sparse ones.")
    coo = bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                         index_dtype=index_dtype)
    return BCSR.from_bcoo(coo)


def bcsr_todense(mat: BCSR) -> Any:
    """The dense array of a BCSR."""
    if not isinstance(mat, BCSR):
        raise NumbaxTypeError(f"bcsr_todense: mat is a {type(mat).__name__}, expected a BCSR.")
    return mat.todense()


def bcsr_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any = None,
                     preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """lax.dot_general with a BCSR operand (computed on its BCOO)."""
    from numbax._src.sparse.bcoo_dot import bcoo_dot_general

    lhs = lhs.to_bcoo() if isinstance(lhs, BCSR) else lhs
    rhs = rhs.to_bcoo() if isinstance(rhs, BCSR) else rhs
    return bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
                            preferred_element_type=preferred_element_type)
