"""The BCOO array (jax.experimental.sparse.BCOO): its pytree form, validation, fromdense and
todense, and the layout helpers every BCOO operation shares.

A BCOO of shape batch + sparse + dense holds `data` (batch + (nse,) + dense) and `indices`
(batch + (nse, n_sparse)); n_batch and n_dense are read off those shapes, so they change as
vmap maps a batch axis away or stacks one on. Its leaves are the two arrays and its aux data
the sparse shape and the sorted/unique flags, so jit, grad and vmap see two ordinary arrays.
An index out of bounds (fromdense pads with the shape itself, as JAX) marks padding: todense
drops it and gathers read 0 there.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import api, core, dtypes, jnp
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.tree_registration import register_pytree_node


def _static_int(api_name: str, name: str, value: Any) -> int:
    """operator.index(value), naming the argument when it is not a Python int."""
    try:
        return operator.index(value)
    except TypeError:
        raise NumbaxTypeError(f"{api_name}: {name} is a {type(value).__name__}, expected a "
                              "Python int. Pass a static integer.") from None


def check_layout(api_name: str, ndim: int, n_batch: int, n_dense: int) -> tuple[int, int]:
    """Validated (n_batch, n_dense) for an array of `ndim` dimensions."""
    n_batch = _static_int(api_name, "n_batch", n_batch)
    n_dense = _static_int(api_name, "n_dense", n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > ndim:
        raise NumbaxValueError(
            f"{api_name}: n_batch={n_batch} and n_dense={n_dense} for an array of {ndim} "
            "dimensions, expected n_batch >= 0, n_dense >= 0 and n_batch + n_dense <= ndim.")
    return n_batch, n_dense


class BCOO:
    """A batched-coordinate sparse array, as jax.experimental.sparse.BCOO.

    Args:
      args: the pair (data, indices): data of shape batch + (nse,) + dense, indices of shape
        batch + (nse, n_sparse) (an integer dtype).
      shape: the shape of the dense array it stands for.
      indices_sorted, unique_indices: promises about the indices that operations may use.

    >>> import numbax.numpy as jnp
    >>> from numbax.experimental import sparse
    >>> M = sparse.BCOO.fromdense(jnp.array([[0., 1.], [2., 0.]], dtype=jnp.float32))
    >>> M
    BCOO(float32[2, 2], nse=2)
    >>> M.indices.tolist(), (M @ jnp.ones(2, jnp.float32)).tolist()
    ([[0, 1], [1, 0]], [1.0, 2.0])
    """

    __array_priority__ = 100.0  # numpy's operators defer to ours
    __array_ufunc__ = None

    def __init__(self, args: tuple, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False) -> None:
        if not isinstance(args, (tuple, list)) or len(args) != 2:
            raise NumbaxTypeError(f"BCOO: args is a {type(args).__name__}, expected the pair "
                                  "(data, indices).")
        data, indices = jnp.asarray(args[0]), jnp.asarray(args[1])
        shape = tuple(_static_int("BCOO", "shape", d) for d in shape)
        _validate(data, indices, shape)
        n_batch = indices.ndim - 2
        batch = shape[:n_batch]
        self.data = jnp.broadcast_to(data, batch + data.shape[n_batch:])
        self.indices = jnp.broadcast_to(indices, batch + indices.shape[n_batch:])
        self._sparse_shape = shape[n_batch:n_batch + indices.shape[-1]]
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)

    # -- layout, read off the leaves
    n_batch = property(lambda self: self.indices.ndim - 2)
    n_sparse = property(lambda self: self.indices.shape[-1])
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)
    nse = property(lambda self: self.indices.shape[-2])
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    T = property(lambda self: self.transpose())

    @property
    def shape(self) -> tuple[int, ...]:
        n_batch = self.n_batch
        return (tuple(self.indices.shape[:n_batch]) + tuple(self._sparse_shape)
                + tuple(self.data.shape[n_batch + 1:]))

    def __repr__(self) -> str:
        extra = "".join(f", {name}={n}" for name, n in
                        (("n_batch", self.n_batch), ("n_dense", self.n_dense)) if n)
        dims = ", ".join(map(str, self.shape))
        return f"BCOO({np.dtype(self.dtype).name}[{dims}], nse={self.nse}{extra})"

    def __len__(self) -> int:
        if not self.shape:
            raise NumbaxTypeError("len() of a 0-d BCOO array.")
        return self.shape[0]

    # -- the pytree
    def tree_flatten(self) -> tuple[tuple, tuple]:
        return (self.data, self.indices), (self._sparse_shape, self.indices_sorted,
                                           self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux: tuple, children: Sequence[Any]) -> BCOO:
        data, indices = children
        if isinstance(indices, core.Tracer) and indices.ndim < 2:
            raise NumbaxValueError(
                "vmap: a BCOO argument has n_batch=0, expected a batch dimension at the mapped "
                "axis. in_axes for BCOO arrays must name one of their batch dimensions: build "
                "it with BCOO.fromdense(..., n_batch=1) or use in_axes=None.")
        obj = object.__new__(cls)
        obj.data, obj.indices = data, indices
        obj._sparse_shape, obj.indices_sorted, obj.unique_indices = aux
        return obj

    # -- conversions
    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                  n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """The BCOO of a dense array (see bcoo_fromdense)."""
        return bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                              index_dtype=index_dtype)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None,
                          n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """The BCOO of a scipy.sparse matrix (its COO entries, duplicates kept)."""
        if n_dense or n_batch:
            raise NumbaxValueError("BCOO.from_scipy_sparse: n_batch and n_dense must be 0 for a "
                                   "2D scipy.sparse matrix.")
        coo = mat.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1).astype(index_dtype or np.int32)
        return cls((jnp.asarray(coo.data), jnp.asarray(indices)), shape=coo.shape)

    def todense(self) -> Any:
        """The dense array (duplicates summed, padding dropped)."""
        return bcoo_todense(self)

    def block_until_ready(self) -> BCOO:
        return self

    def astype(self, dtype: Any) -> BCOO:
        """The same sparsity pattern with data converted to `dtype`."""
        return BCOO((self.data.astype(dtype), self.indices), shape=self.shape,
                    indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

    def update_layout(self, *, n_batch: int | None = None, n_dense: int | None = None,
                      on_inefficient: str = "error") -> BCOO:
        """The same array with batch dimensions turned sparse (n_batch may only decrease and
        n_dense must stay; unlike JAX, other layout changes raise NotImplementedError)."""
        n_batch = self.n_batch if n_batch is None else n_batch
        n_dense = self.n_dense if n_dense is None else n_dense
        check_layout("BCOO.update_layout", self.ndim, n_batch, n_dense)
        if n_dense != self.n_dense or n_batch > self.n_batch:
            raise NotImplementedError(
                "BCOO.update_layout: numbax only lowers n_batch (turning batch dimensions "
                "into sparse ones); go through todense() and fromdense() for other layouts.")
        return unbatch(self, self.n_batch - n_batch)

    # -- methods: the operations live in bcoo_ops.py and rules.py (imported when called)
    def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
        """The transpose (reversed axes by default) as a BCOO (see bcoo_transpose)."""
        perm = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
        return _ops().bcoo_transpose(self, permutation=perm)

    def sum(self, axis: int | Sequence[int] | None = None, dtype: Any = None,
            keepdims: bool = False) -> Any:
        """The sum over `axis` (all by default): a BCOO, or a dense scalar for a full sum."""
        if keepdims:
            raise NotImplementedError("BCOO.sum: keepdims=True is not implemented.")
        axes = range(self.ndim) if axis is None else (
            (axis,) if isinstance(axis, int) else tuple(axis))
        mat = self if dtype is None else self.astype(dtype)
        out = _ops().bcoo_reduce_sum(mat, axes=tuple(axes))
        return out.todense() if out.ndim == 0 else out

    def reshape(self, *args: Any, **kwargs: Any) -> BCOO:
        """The reshaped array (sizes as varargs or one tuple; one -1 allowed)."""
        sizes = kwargs.pop("new_sizes", kwargs.pop("shape", None))
        if kwargs:
            raise NumbaxTypeError(f"BCOO.reshape: unexpected arguments {sorted(kwargs)}.")
        if sizes is None:
            sizes = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
        sizes = [_static_int("BCOO.reshape", "shape", d) for d in sizes]
        if sizes.count(-1) == 1:
            known = int(np.prod([d for d in sizes if d != -1], dtype=np.int64))
            sizes[sizes.index(-1)] = self.size // known if known else 0
        return _ops().bcoo_reshape(self, new_sizes=tuple(sizes))

    def sort_indices(self) -> BCOO:
        """The same array, entries in lexicographic index order (see bcoo_sort_indices)."""
        return _ops().bcoo_sort_indices(self)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCOO:
        """Each index stored once, sorted; with remove_zeros, entries summing to 0 become
        padding (see bcoo_sum_duplicates)."""
        return _ops().sum_duplicates(self, nse, remove_zeros, "BCOO.sum_duplicates")

    def __matmul__(self, other: Any) -> Any:
        return _rules().matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _rules().matmul(other, self)

    def __mul__(self, other: Any) -> Any:
        return _rules().mul(self, other)

    def __rmul__(self, other: Any) -> Any:
        return _rules().mul(other, self)

    def __add__(self, other: Any) -> Any:
        return _rules().add(self, other)

    def __radd__(self, other: Any) -> Any:
        return _rules().add(other, self)

    def __sub__(self, other: Any) -> Any:
        return _rules().add(self, other, sign=-1)

    def __rsub__(self, other: Any) -> Any:
        return _rules().add(other, self, sign=-1)

    def __truediv__(self, other: Any) -> Any:
        return _rules().div(self, other)

    def __neg__(self) -> BCOO:
        return BCOO((-self.data, self.indices), shape=self.shape,
                    indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

    def __abs__(self) -> BCOO:
        return _rules().unary(self, jnp.abs)

    def __pow__(self, exponent: Any) -> BCOO:
        return _rules().power(self, exponent)


def _ops() -> Any:
    from numbax._src.sparse import bcoo_ops  # the operations import this module

    return bcoo_ops


def _rules() -> Any:
    from numbax._src.sparse import rules

    return rules


register_pytree_node(BCOO, BCOO.tree_flatten, BCOO.tree_unflatten)


def _validate(data: Any, indices: Any, shape: tuple[int, ...]) -> None:
    """JAX's checks on a BCOO's buffers, each naming the argument."""
    if indices.ndim < 2:
        raise NumbaxValueError(f"BCOO: indices has shape {indices.shape}, expected at least 2 "
                               "dimensions (batch dims, nse, n_sparse).")
    if not dtypes.issubdtype(indices.dtype, np.integer):
        raise NumbaxTypeError(f"BCOO: indices has dtype {indices.dtype}, expected an integer "
                              "dtype.")
    n_batch, n_sparse = indices.ndim - 2, indices.shape[-1]
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0 or data.ndim != n_batch + 1 + n_dense:
        raise NumbaxValueError(
            f"BCOO: data has shape {data.shape} and indices {indices.shape}, expected data of "
            f"{n_batch} batch dims, nse and the dense dims of shape {shape}.")
    if data.shape[n_batch] != indices.shape[n_batch]:
        raise NumbaxValueError(f"BCOO: data has nse={data.shape[n_batch]} and indices "
                               f"nse={indices.shape[n_batch]}, expected equal.")
    for name, buf in (("data", data), ("indices", indices)):
        if any(b not in (1, s) for b, s in zip(buf.shape[:n_batch], shape[:n_batch])):
            raise NumbaxValueError(f"BCOO: {name} has batch shape {buf.shape[:n_batch]}, "
                                   f"expected {shape[:n_batch]} (or 1s) for shape {shape}.")
    if tuple(data.shape[n_batch + 1:]) != shape[len(shape) - n_dense:]:
        raise NumbaxValueError(f"BCOO: data has dense shape {data.shape[n_batch + 1:]}, expected "
                               f"{shape[len(shape) - n_dense:]} for shape {shape}.")


# ----------------------------------------------------------------------------- helpers


def per_batch(fn: Callable, n_batch: int, in_axes: Sequence[int | None] | int = 0) -> Callable:
    """fn applied to each batch element: vmap over the n_batch leading axes."""
    for _ in range(n_batch):
        fn = api.vmap(fn, in_axes=in_axes if isinstance(in_axes, int) else tuple(in_axes))
    return fn


def safe_columns(indices: Any, sparse_shape: Sequence[int]) -> list:
    """The index columns, with each negative or too large index set to its dimension's size:
    an entry out of bounds in any column is padding (dropped by scatters, 0 in gathers)."""
    n = len(sparse_shape)
    if n == 0:
        return []
    cols = [indices[..., d] for d in range(n)]
    valid = (indices >= 0) & (indices < jnp.asarray(sparse_shape, indices.dtype))
    ok = jnp.all(valid, axis=-1)
    return [jnp.where(ok, c, jnp.asarray(s, c.dtype)) for c, s in zip(cols, sparse_shape)]


def unbatch(mat: BCOO, n: int | None = None) -> BCOO:
    """The same array with its last `n` (default all) batch dimensions made sparse: their
    coordinates join the index columns and their entries the nse axis."""
    n = mat.n_batch if n is None else n
    if n == 0:
        return mat
    keep = mat.n_batch - n
    batch = mat.shape[keep:mat.n_batch]
    grids = jnp.meshgrid(*[jnp.arange(b, dtype=mat.indices.dtype) for b in batch],
                         indexing="ij")
    coords = jnp.stack(grids, axis=-1)
    nse = mat.nse
    coords = jnp.broadcast_to(coords[..., None, :], mat.indices.shape[:-1] + (n,))
    indices = jnp.concatenate([coords, mat.indices], axis=-1)
    lead = mat.shape[:keep]
    indices = indices.reshape(lead + (int(np.prod(batch)) * nse, n + mat.n_sparse))
    data = mat.data.reshape(lead + (int(np.prod(batch)) * nse,) + mat.data.shape[mat.n_batch + 1:])
    return BCOO((data, indices), shape=mat.shape)


# ----------------------------------------------------------------------------- fromdense


def _count_nse(mask: Any, n_batch: int) -> int:
    """The largest count of specified elements over the batch, as a Python int (raises under
    jit/vmap, as JAX's fromdense does without a static nse)."""
    counts = jnp.sum(mask, axis=tuple(range(n_batch, mask.ndim)))
    total = jnp.max(counts) if counts.ndim else counts
    return int(core.concrete_or_error(
        total, "the nse argument of bcoo_fromdense: to use BCOO.fromdense() in traced or "
        "compiled code, pass a concrete nse=<int> (the number of stored elements)"))


def bcoo_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCOO:
    """The BCOO array of a dense one.

    Args:
      mat: the dense array.
      nse: how many elements to store per batch (a Python int); needed under jit/vmap. Nonzeros
        past it are dropped; extra slots are padding (data 0, indices the shape itself).
      n_batch, n_dense: how many leading (trailing) dimensions are batch (dense) ones.
      index_dtype: the dtype of the indices (int32 as in JAX).

    Returns:
      A BCOO with sorted, unique indices.

    >>> import numbax.numpy as jnp
    >>> bcoo_fromdense(jnp.array([0., 3., 0., 4.]), nse=3).indices.tolist()
    [[1], [3], [4]]
    """
    mat = jnp.asarray(mat)
    n_batch, n_dense = check_layout("bcoo_fromdense", mat.ndim, n_batch, n_dense)
    n_sparse = mat.ndim - n_batch - n_dense
    mask = mat != 0
    if n_dense:
        mask = jnp.any(mask, axis=tuple(range(mat.ndim - n_dense, mat.ndim)))
    if nse is None:
        nse = _count_nse(mask, n_batch) if n_sparse else 1
    nse = _static_int("bcoo_fromdense", "nse", nse)
    if nse < 0:
        raise NumbaxValueError(f"bcoo_fromdense: nse is {nse}, expected nse >= 0.")
    sparse_shape = mat.shape[n_batch:n_batch + n_sparse]
    index_dtype = np.dtype(index_dtype)

    def one(m: Any, keep: Any) -> tuple[Any, Any]:
        if not n_sparse:
            data = jnp.concatenate([m[None], jnp.zeros((nse - 1,) + m.shape, m.dtype)])[:nse]
            return data, jnp.zeros((nse, 0), index_dtype)
        cols = jnp.nonzero(keep, size=nse, fill_value=sparse_shape)
        cols = [c.astype(index_dtype) for c in cols]
        data = m.at[tuple(cols)].get(mode="fill", fill_value=0)
        return data, jnp.stack(cols, axis=-1)

    data, indices = per_batch(one, n_batch)(mat, mask)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_todense(mat: BCOO) -> Any:
    """The dense array of a BCOO: duplicates summed, padding (out-of-bounds indices) dropped.

    >>> import numbax.numpy as jnp
    >>> m = BCOO((jnp.array([1., 2., 5.]), jnp.array([[0], [0], [3]])), shape=(3,))
    >>> bcoo_todense(m).tolist()
    [3.0, 0.0, 0.0]
    """
    if not isinstance(mat, BCOO):
        raise NumbaxTypeError(f"bcoo_todense: mat is a {type(mat).__name__}, expected a BCOO.")
    sparse_shape = tuple(mat._sparse_shape)
    dense_shape = mat.data.shape[mat.n_batch + 1:]

    def one(data: Any, indices: Any) -> Any:
        if not sparse_shape:
            return jnp.sum(data, axis=0)
        cols = safe_columns(indices, sparse_shape)
        out = jnp.zeros(sparse_shape + dense_shape, data.dtype)
        return out.at[tuple(cols)].add(data, mode="drop")

    return per_batch(one, mat.n_batch)(mat.data, mat.indices)


# ----------------------------------------------------------------------------- creation


def _default_float(dtype: Any) -> Any:
    return dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)


def bcoo_empty(shape: Sequence[int], dtype: Any = None, index_dtype: Any = "int32",
               n_batch: int = 0, n_dense: int = 0) -> BCOO:
    """An all-zero BCOO of `shape` with nse=0."""
    shape = tuple(_static_int("empty", "shape", d) for d in shape)
    n_batch, n_dense = check_layout("empty", len(shape), n_batch, n_dense)
    n_sparse = len(shape) - n_batch - n_dense
    batch, dense = shape[:n_batch], shape[len(shape) - n_dense:]
    data = jnp.zeros(batch + (0,) + dense, _default_float(dtype))
    indices = jnp.zeros(batch + (0, n_sparse), np.dtype(index_dtype))
    return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)


def bcoo_eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None,  # noqa: N803
             index_dtype: Any = "int32", n_batch: int = 0, n_dense: int = 0) -> BCOO:
    """The identity (ones on diagonal k) as a 2D BCOO."""
    N = _static_int("eye", "N", N)  # noqa: N806 - JAX's argument names
    M = N if M is None else _static_int("eye", "M", M)  # noqa: N806
    k = _static_int("eye", "k", k)
    if n_batch or n_dense:
        return bcoo_fromdense(jnp.eye(N, M, k, dtype=_default_float(dtype)), n_batch=n_batch,
                              n_dense=n_dense, index_dtype=index_dtype)
    count = max(0, min(N, M - k) if k >= 0 else min(N + k, M))
    rows = np.arange(count) + max(-k, 0)
    indices = np.stack([rows, rows + k], axis=1).astype(np.dtype(index_dtype))
    data = jnp.ones(count, _default_float(dtype))
    return BCOO((data, jnp.asarray(indices)), shape=(N, M), indices_sorted=True,
                unique_indices=True)
