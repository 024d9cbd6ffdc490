"""BCOO operations that keep the result sparse: reduce_sum, transpose, reshape, elementwise
multiplication, sort_indices and sum_duplicates. Each is a composition of numbax's gathers,
sorts, segment sums and reshapes on (data, indices), applied per batch element by vmap.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, jnp
from numbax._src.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError
from numbax._src.ops import segment_sum
from numbax._src.sparse.bcoo import BCOO, per_batch, safe_columns


def _check_bcoo(api_name: str, mat: Any) -> None:
    if not isinstance(mat, BCOO):
        raise NumbaxTypeError(f"{api_name}: mat is a {type(mat).__name__}, expected a BCOO.")


def _valid_mask(cols: list, sparse_shape: Sequence[int], like: Any) -> Any:
    """True where an entry is stored (not padding), of the indices' batch + (nse,) shape."""
    ok = jnp.ones(like.shape[:-1], bool)
    for c, s in zip(cols, sparse_shape):
        ok = ok & (c != s)
    return ok


def _stack_columns(cols: list, like: Any) -> Any:
    """The index array of `cols` (shape batch + (nse, len(cols)))."""
    if not cols:
        return jnp.zeros(like.shape[:-1] + (0,), like.dtype)
    return jnp.stack(cols, axis=-1)


# ----------------------------------------------------------------------------- reduce_sum


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """The sum over `axes` of a BCOO, as a BCOO: dense axes are summed in data, sparse ones drop
    their index column (duplicates may follow), batch ones join the nse axis.

    >>> import numbax.numpy as jnp
    >>> from numbax._src.sparse.bcoo import bcoo_fromdense
    >>> m = bcoo_fromdense(jnp.array([[1., 0.], [2., 3.]]))
    >>> bcoo_reduce_sum(m, axes=(0,)).todense().tolist()
    [3.0, 3.0]
    """
    _check_bcoo("bcoo_reduce_sum", mat)
    ndim, nb, ns = mat.ndim, mat.n_batch, mat.n_sparse
    try:
        raw = [operator.index(a) for a in axes]
    except TypeError:
        raise NumbaxTypeError(f"bcoo_reduce_sum: axes is {axes!r}, expected a sequence of "
                              "ints.") from None
    if any(not -ndim <= a < ndim for a in raw):
        raise NumbaxValueError(f"bcoo_reduce_sum: axes {tuple(raw)} for an array of {ndim} "
                               "dimensions, expected axes in [-ndim, ndim).")
    axes = sorted({a % ndim for a in raw})
    b_axes = [a for a in axes if a < nb]
    s_axes = [a - nb for a in axes if nb <= a < nb + ns]
    d_axes = [a - nb - ns for a in axes if a >= nb + ns]
    data, indices = mat.data, mat.indices
    sparse_shape = list(mat.shape[nb:nb + ns])
    if d_axes:
        data = jnp.sum(data, axis=tuple(nb + 1 + d for d in d_axes))
    if s_axes:
        cols = safe_columns(indices, sparse_shape)
        valid = _valid_mask(cols, sparse_shape, indices)
        data = jnp.where(valid.reshape(valid.shape + (1,) * (data.ndim - valid.ndim)), data,
                         jnp.zeros((), data.dtype))
        keep = [i for i in range(ns) if i not in s_axes]
        indices = _stack_columns([cols[i] for i in keep], indices)
        sparse_shape = [sparse_shape[i] for i in keep]
    if b_axes:
        kept = [b for b in range(nb) if b not in b_axes]
        lead = tuple(mat.shape[b] for b in kept)
        nse = mat.nse * int(np.prod([mat.shape[b] for b in b_axes]))
        data = jnp.transpose(data, kept + b_axes + list(range(nb, data.ndim)))
        data = data.reshape(lead + (nse,) + data.shape[nb + 1:])
        indices = jnp.transpose(indices, kept + b_axes + [nb, nb + 1])
        indices = indices.reshape(lead + (nse, indices.shape[-1]))
    shape = tuple(d for i, d in enumerate(mat.shape) if i not in axes)
    return BCOO((data, indices), shape=shape,
                unique_indices=mat.unique_indices and not s_axes and not b_axes)


# ----------------------------------------------------------------------------- transpose


def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    """lax.transpose of a BCOO; the permutation must keep batch, sparse and dense dimensions
    apart (it permutes within each group), as JAX's.

    >>> import numbax.numpy as jnp
    >>> from numbax._src.sparse.bcoo import bcoo_fromdense
    >>> bcoo_transpose(bcoo_fromdense(jnp.eye(2, 3)), permutation=(1, 0)).shape
    (3, 2)
    """
    _check_bcoo("bcoo_transpose", mat)
    perm = tuple(operator.index(p) for p in permutation)
    if sorted(perm) != list(range(mat.ndim)):
        raise NumbaxValueError(f"bcoo_transpose: permutation is {perm}, expected a permutation "
                               f"of range({mat.ndim}).")
    nb, ns = mat.n_batch, mat.n_sparse
    bp, sp, dp = perm[:nb], perm[nb:nb + ns], perm[nb + ns:]
    if (sorted(bp) != list(range(nb)) or sorted(sp) != list(range(nb, nb + ns))):
        raise NotImplementedError(
            f"bcoo_transpose: permutation {perm} mixes batch, sparse and dense axes (n_batch="
            f"{nb}, n_sparse={ns}); transpose within each group, or change the layout first.")
    data = jnp.transpose(mat.data, bp + (nb,) + tuple(d - ns + 1 for d in dp))
    indices = jnp.transpose(mat.indices, bp + (nb, nb + 1))
    if ns:
        indices = jnp.stack([indices[..., s - nb] for s in sp], axis=-1)
    shape = tuple(mat.shape[p] for p in perm)
    identity = sp == tuple(range(nb, nb + ns)) and bp == tuple(range(nb))
    return BCOO((data, indices), shape=shape, indices_sorted=mat.indices_sorted and identity,
                unique_indices=mat.unique_indices)


# ----------------------------------------------------------------------------- reshape


def _split_sizes(new_sizes: tuple, batch_size: int, dense_size: int) -> tuple[int, int]:
    """Where new_sizes splits into batch, sparse and dense parts (shortest batch prefix and
    dense suffix with the old sizes), or (-1, -1)."""
    i_b = next((i for i in range(len(new_sizes) + 1)
                if int(np.prod(new_sizes[:i], dtype=np.int64)) == batch_size), -1)
    i_d = next((i for i in range(len(new_sizes), -1, -1)
                if int(np.prod(new_sizes[i:], dtype=np.int64)) == dense_size), -1)
    if i_b < 0 or i_d < i_b:
        return -1, -1
    return i_b, i_d


def bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
                 sharding: Any = None) -> BCOO:
    """lax.reshape of a BCOO: batch, sparse and dense dimensions reshape among themselves
    (sparse coordinates are re-raveled), as JAX's.

    >>> import numbax.numpy as jnp
    >>> from numbax._src.sparse.bcoo import bcoo_fromdense
    >>> bcoo_reshape(bcoo_fromdense(jnp.eye(2)), new_sizes=(4,)).indices.tolist()
    [[0], [3]]
    """
    del sharding
    _check_bcoo("bcoo_reshape", mat)
    if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
        mat = bcoo_transpose(mat, permutation=dimensions)
    new_sizes = tuple(operator.index(d) for d in new_sizes)
    if int(np.prod(new_sizes, dtype=np.int64)) != mat.size:
        raise NumbaxTypeError(f"bcoo_reshape: new_sizes is {new_sizes} (size "
                              f"{int(np.prod(new_sizes))}), expected the size {mat.size} of "
                              f"shape {mat.shape}.")
    nb, ns = mat.n_batch, mat.n_sparse
    batch, sparse, dense = mat.shape[:nb], mat.shape[nb:nb + ns], mat.shape[nb + ns:]
    i_b, i_d = _split_sizes(new_sizes, int(np.prod(batch)), int(np.prod(dense)))
    if i_b < 0:
        raise NumbaxValueError(
            f"bcoo_reshape: new_sizes {new_sizes} cannot keep the batch dims {batch} and the "
            f"dense dims {dense} of shape {mat.shape} apart; change the layout first.")
    new_batch, new_sparse, new_dense = new_sizes[:i_b], new_sizes[i_b:i_d], new_sizes[i_d:]
    data = mat.data.reshape(new_batch + (mat.nse,) + new_dense)
    indices = mat.indices.reshape(new_batch + mat.indices.shape[nb:])
    if new_sparse != sparse:
        indices = _reravel(indices, sparse, new_sparse)
    return BCOO((data, indices), shape=new_sizes, unique_indices=mat.unique_indices,
                indices_sorted=mat.indices_sorted)


def _reravel(indices: Any, old: tuple, new: tuple) -> Any:
    """Index columns for `old` sparse dims as columns for `new` ones (padding stays padding)."""
    size = int(np.prod(old, dtype=np.int64))
    dtype = indices.dtype if size <= np.iinfo(indices.dtype).max else np.dtype(np.int64)
    cols = safe_columns(indices, old)
    valid = _valid_mask(cols, old, indices)
    flat = jnp.zeros(indices.shape[:-1], dtype)
    for c, s in zip(cols, old):
        flat = flat * s + c.astype(dtype)
    out = []
    for s in reversed(new):
        out.append(flat % s)
        flat = flat // s
    out = [jnp.where(valid, c, s).astype(indices.dtype) for c, s in zip(out[::-1], new)]
    return _stack_columns(out, indices)


# ----------------------------------------------------------------------------- multiply


def _dense_operand(api_name: str, mat: BCOO, v: Any) -> Any:
    """v broadcast against mat: leading 1s added, its batch dims made full."""
    v = jnp.asarray(v)
    shape = mat.shape
    if v.ndim > mat.ndim or any(a not in (1, b) for a, b in
                                zip(v.shape[::-1], shape[::-1])):
        raise NumbaxValueError(f"{api_name}: v has shape {v.shape}, expected a shape that "
                               f"broadcasts to the sparse array's {shape}.")
    v = v.reshape((1,) * (mat.ndim - v.ndim) + v.shape)
    nb = mat.n_batch
    return jnp.broadcast_to(v, shape[:nb] + v.shape[nb:])


def bcoo_multiply_dense(sp_mat: BCOO, v: Any) -> Any:
    """The elementwise product of a BCOO and a dense array at the stored entries.

    Returns:
      The product's data (batch + (nse,) + dense shape), as JAX returns; the BCOO product is
      `BCOO((bcoo_multiply_dense(m, v), m.indices), shape=m.shape)` (what `m * v` gives).

    >>> import numbax.numpy as jnp
    >>> from numbax._src.sparse.bcoo import bcoo_fromdense
    >>> bcoo_multiply_dense(bcoo_fromdense(jnp.array([0., 2., 3.])), jnp.arange(3.)).tolist()
    [2.0, 6.0]
    """
    _check_bcoo("bcoo_multiply_dense", sp_mat)
    v = _dense_operand("bcoo_multiply_dense", sp_mat, v)
    nb, ns = sp_mat.n_batch, sp_mat.n_sparse
    sparse_shape = sp_mat.shape[nb:nb + ns]

    def one(data: Any, indices: Any, vb: Any) -> Any:
        cols = safe_columns(indices, sparse_shape)
        cols = [c if vb.shape[i] != 1 else jnp.where(c == s, 1, 0).astype(c.dtype)
                for i, (c, s) in enumerate(zip(cols, sparse_shape))]
        g = vb.at[tuple(cols)].get(mode="fill", fill_value=0) if cols else vb[None]
        return data * g

    return per_batch(one, nb)(sp_mat.data, sp_mat.indices, v)


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
    """The elementwise product of two BCOO arrays of one shape, stored at lhs's entries.

    Unlike JAX (whose result has the pairs of entries that meet), rhs is read densely at
    lhs's indices, so the result has lhs's nse.
    """
    _check_bcoo("bcoo_multiply_sparse", lhs)
    _check_bcoo("bcoo_multiply_sparse", rhs)
    if lhs.shape != rhs.shape:
        raise NumbaxValueError(f"bcoo_multiply_sparse: rhs has shape {rhs.shape}, expected "
                               f"lhs's {lhs.shape}.")
    data = bcoo_multiply_dense(lhs, rhs.todense())
    return BCOO((data, lhs.indices), shape=lhs.shape, indices_sorted=lhs.indices_sorted,
                unique_indices=lhs.unique_indices)


# ----------------------------------------------------------------------------- sorting


def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """The same array with entries in lexicographic index order (stable; padding last).

    >>> import numbax.numpy as jnp
    >>> m = BCOO((jnp.array([1., 2.]), jnp.array([[1], [0]])), shape=(2,))
    >>> bcoo_sort_indices(m).data.tolist()
    [2.0, 1.0]
    """
    _check_bcoo("bcoo_sort_indices", mat)
    nb, ns = mat.n_batch, mat.n_sparse
    sparse_shape = mat.shape[nb:nb + ns]
    if not ns:
        return mat

    def one(data: Any, indices: Any) -> tuple[Any, Any]:
        cols = safe_columns(indices, sparse_shape)
        perm = jnp.lexsort(tuple(cols[::-1]))
        return data[perm], indices[perm]

    data, indices = per_batch(one, nb)(mat.data, mat.indices)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
                unique_indices=mat.unique_indices)


def _sum_sorted(data: Any, indices: Any, sparse_shape: tuple, nse: int) -> tuple:
    """One batch element's duplicates summed into `nse` sorted slots: (data, indices, count)."""
    cols = safe_columns(indices, sparse_shape)
    valid = _valid_mask(cols, sparse_shape, indices)
    perm = jnp.lexsort(tuple(cols[::-1]) + (~valid,))
    sorted_idx = jnp.stack(cols, axis=-1)[perm]
    sorted_valid = valid[perm]
    diff = jnp.any(sorted_idx[1:] != sorted_idx[:-1], axis=-1)
    new = jnp.concatenate([jnp.ones((1,), bool), diff]) & sorted_valid
    seg = jnp.where(sorted_valid, jnp.cumsum(new) - 1, nse)
    out_data = segment_sum(data[perm], seg, num_segments=nse)
    fill = jnp.broadcast_to(jnp.asarray(sparse_shape, indices.dtype), (nse, len(sparse_shape)))
    out_idx = fill.at[seg].set(sorted_idx, mode="drop")
    return out_data, out_idx, jnp.sum(new)


def _concrete_nse(api_name: str, counts: Any) -> int:
    """max(counts) as a Python int; JAX's ValueError when it is traced."""
    total = jnp.max(counts) if counts.ndim else counts
    try:
        return int(core.concrete_or_error(total, f"the nse argument of {api_name}"))
    except ConcretizationTypeError:
        raise NumbaxValueError(
            f"{api_name}: nse must be specified when using the function within jit, vmap, and "
            "other transformations requiring abstract evaluation.") from None


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
    """The same array with each index stored once (data summed), sorted, padding last.

    Args:
      mat: a BCOO.
      nse: the output's nse (a Python int; needed under jit/vmap). Entries past it are
        dropped, missing ones are padding. By default the number of distinct indices.

    >>> import numbax.numpy as jnp
    >>> m = BCOO((jnp.array([1., 2., 3.]), jnp.array([[1], [0], [1]])), shape=(2,))
    >>> s = bcoo_sum_duplicates(m)
    >>> s.data.tolist(), s.indices.tolist()
    ([2.0, 4.0], [[0], [1]])
    """
    return sum_duplicates(mat, nse, remove_zeros=False, api_name="bcoo_sum_duplicates")


def sum_duplicates(mat: BCOO, nse: int | None, remove_zeros: bool, api_name: str) -> BCOO:
    """bcoo_sum_duplicates, optionally dropping entries whose sum is zero (BCOO's method)."""
    _check_bcoo(api_name, mat)
    nb, ns = mat.n_batch, mat.n_sparse
    sparse_shape = tuple(mat.shape[nb:nb + ns])
    if nse is not None:
        nse = operator.index(nse)
    if not ns:
        data = jnp.sum(mat.data, axis=nb, keepdims=True)
        return BCOO((data, mat.indices[..., :1, :]), shape=mat.shape, indices_sorted=True,
                    unique_indices=True)
    pass_nse = mat.nse if (remove_zeros or nse is None) else nse

    def one(data: Any, indices: Any) -> tuple:
        return _sum_sorted(data, indices, sparse_shape, pass_nse)

    data, indices, counts = per_batch(one, nb)(mat.data, mat.indices)
    if remove_zeros:
        nonzero = data != 0
        if nonzero.ndim > nb + 1:
            nonzero = jnp.any(nonzero, axis=tuple(range(nb + 1, nonzero.ndim)))
        indices = jnp.where(nonzero[..., None], indices, jnp.asarray(sparse_shape,
                                                                     indices.dtype))
        counts = jnp.sum(nonzero, axis=-1)
        mat = BCOO((data, indices), shape=mat.shape)
    if nse is None:
        nse = _concrete_nse(api_name, counts)
    if nse != pass_nse or remove_zeros:
        def again(data: Any, indices: Any) -> tuple:
            return _sum_sorted(data, indices, sparse_shape, nse)[:2]

        data, indices = per_batch(again, nb)(mat.data, mat.indices)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)
