"""bcoo_dot_general: contractions of a BCOO with a dense array (either side) or another BCOO,
as one gather of the dense operand at the stored indices, one dot_general over the stored
entries and one scatter-add into the result, so grad and vmap come from those primitives.

Batch dimensions are first made sparse (bcoo.unbatch), so one code path serves every layout.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from numbax._src import api, jnp
from numbax._src.errors import NumbaxTypeError
from numbax._src.lax.dot import dot_general
from numbax._src.sparse.bcoo import BCOO, safe_columns, unbatch


def _dimension_numbers(dimension_numbers: Any) -> tuple:
    """((lc, rc), (lb, rb)) as tuples of ints."""
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        return (tuple(map(int, lc)), tuple(map(int, rc))), (tuple(map(int, lb)),
                                                             tuple(map(int, rb)))
    except (TypeError, ValueError):
        raise NumbaxTypeError(
            f"bcoo_dot_general: dimension_numbers is {dimension_numbers!r}, expected "
            "((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).") from None


def _out_aval(lhs_shape: Sequence[int], rhs_shape: Sequence[int], dtype: Any, dn: tuple,
              preferred_element_type: Any) -> Any:
    """The dense dot_general's output shape and dtype (its checks are ours too)."""
    fn = functools.partial(dot_general, dimension_numbers=dn,
                           preferred_element_type=preferred_element_type)
    return api.eval_shape(fn, api.ShapeDtypeStruct(lhs_shape, dtype),
                          api.ShapeDtypeStruct(rhs_shape, dtype))


def bcoo_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any = None,
                     preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """lax.dot_general where either operand (or both) is a BCOO.

    Args:
      lhs, rhs: BCOO or dense arrays.
      dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
      precision, preferred_element_type: as lax.dot_general.

    Returns:
      A dense array when one operand is dense; a BCOO of nse = lhs.nse * rhs.nse (entries
      that do not meet are padding) when both are sparse, as JAX.

    >>> import numbax.numpy as jnp
    >>> from numbax._src.sparse.bcoo import bcoo_fromdense
    >>> m = bcoo_fromdense(jnp.array([[1., 0.], [0., 2.]]))
    >>> bcoo_dot_general(m, jnp.array([3., 4.]), dimension_numbers=(([1], [0]), ([], []))).tolist()
    [3.0, 8.0]
    """
    del out_sharding
    dn = _dimension_numbers(dimension_numbers)
    lhs_sp, rhs_sp = isinstance(lhs, BCOO), isinstance(rhs, BCOO)
    if lhs_sp and rhs_sp:
        return _sparse_sparse(lhs, rhs, dn, precision, preferred_element_type)
    if lhs_sp:
        return _sparse_dense(lhs, jnp.asarray(rhs), dn, precision, preferred_element_type)
    if not rhs_sp:
        return dot_general(lhs, rhs, dn, precision, preferred_element_type)
    lhs = jnp.asarray(lhs)
    (lc, rc), (lb, rb) = dn
    out = _sparse_dense(rhs, lhs, ((rc, lc), (rb, lb)), precision, preferred_element_type)
    nb = len(lb)
    n_sp_free = rhs.ndim - len(rc) - nb
    n_dn_free = lhs.ndim - len(lc) - nb
    perm = (list(range(nb)) + [nb + n_sp_free + i for i in range(n_dn_free)]
            + [nb + i for i in range(n_sp_free)])
    return jnp.transpose(out, perm)


def _promote(mat: BCOO, other: Any) -> tuple[Any, Any]:
    dtype = jnp.result_type(mat.data, other)
    return mat.data.astype(dtype), jnp.asarray(other).astype(dtype)


def _sparse_dense(mat: BCOO, rhs: Any, dn: tuple, precision: Any,
                  preferred_element_type: Any) -> Any:
    """BCOO @ dense along dn: the output in lax.dot_general's dimension order."""
    data, rhs = _promote(mat, rhs)
    out = _out_aval(mat.shape, rhs.shape, data.dtype, dn, preferred_element_type)
    mat = unbatch(BCOO((data, mat.indices), shape=mat.shape))
    n_sp = mat.n_sparse
    (lc, rc), (lb, rb) = dn
    cols = safe_columns(mat.indices, mat.shape[:n_sp])
    gathered = [(lhs_d, rhs_d) for lhs_d, rhs_d in zip(lc + lb, rc + rb) if lhs_d < n_sp]
    d_con = [(lhs_d - n_sp + 1, rhs_d) for lhs_d, rhs_d in zip(lc, rc) if lhs_d >= n_sp]
    d_bat = [(lhs_d - n_sp + 1, rhs_d) for lhs_d, rhs_d in zip(lb, rb) if lhs_d >= n_sp]
    kw = {"precision": precision, "preferred_element_type": preferred_element_type}
    if gathered:
        g_dims = [rhs_d for _, rhs_d in gathered]
        rest = [d for d in range(rhs.ndim) if d not in g_dims]
        rhs_t = jnp.transpose(rhs, g_dims + rest)
        g = rhs_t.at[tuple(cols[lhs_d] for lhs_d, _ in gathered)].get(mode="fill", fill_value=0)
        pos = {r: 1 + i for i, r in enumerate(rest)}
        contrib = dot_general(
            mat.data, g, (([a for a, _ in d_con], [pos[r] for _, r in d_con]),
                          ([0] + [a for a, _ in d_bat], [0] + [pos[r] for _, r in d_bat])), **kw)
    else:
        contrib = dot_general(mat.data, rhs, (([a for a, _ in d_con], [r for _, r in d_con]),
                                              ([a for a, _ in d_bat], [r for _, r in d_bat])),
                              **kw)
        contrib = jnp.moveaxis(contrib, len(d_bat), 0)
    return _assemble(contrib, cols, mat.ndim, n_sp, dn, out.shape)


def _assemble(contrib: Any, cols: list, lhs_ndim: int, n_sp: int, dn: tuple,
              out_shape: Sequence[int]) -> Any:
    """Scatter-adds the per-entry products (nse, dense batch, dense free, rhs free) into the
    output, at the output positions the sparse batch and free dims of the lhs pick."""
    (lc, _), (lb, _) = dn
    nb = len(lb)
    lfree = [d for d in range(lhs_ndim) if d not in lc and d not in lb]
    scattered = [(i, d) for i, d in enumerate(lb) if d < n_sp]
    scattered += [(nb + j, d) for j, d in enumerate(lfree) if d < n_sp]
    held = [i for i, d in enumerate(lb) if d >= n_sp]
    held += [nb + j for j, d in enumerate(lfree) if d >= n_sp]
    held += list(range(nb + len(lfree), len(out_shape)))
    if scattered:
        acc = jnp.zeros(tuple(out_shape[p] for p, _ in scattered) + contrib.shape[1:],
                        contrib.dtype)
        acc = acc.at[tuple(cols[d] for _, d in scattered)].add(contrib, mode="drop")
    else:
        acc = jnp.sum(contrib, axis=0)
    positions = [p for p, _ in scattered] + held
    return jnp.transpose(acc, [positions.index(p) for p in range(len(out_shape))])


def _sparse_sparse(lhs: BCOO, rhs: BCOO, dn: tuple, precision: Any,
                   preferred_element_type: Any) -> BCOO:
    """BCOO @ BCOO: every pair of stored entries, kept where their contracted and batch
    coordinates agree (the rest are padding)."""
    del precision
    if lhs.n_dense or rhs.n_dense:
        raise NotImplementedError("bcoo_dot_general: a product of two BCOO arrays with dense "
                                  "dimensions is not implemented; densify one operand.")
    dtype = jnp.result_type(lhs.data, rhs.data)
    out = _out_aval(lhs.shape, rhs.shape, dtype, dn, preferred_element_type)
    lhs, rhs = unbatch(lhs), unbatch(rhs)
    lcols = safe_columns(lhs.indices, lhs.shape)
    rcols = safe_columns(rhs.indices, rhs.shape)
    lvalid = _valid(lcols, lhs.shape, lhs.nse)[:, None]
    rvalid = _valid(rcols, rhs.shape, rhs.nse)[None, :]
    match = lvalid & rvalid
    (lc, rc), (lb, rb) = dn
    for lhs_d, rhs_d in zip(lc + lb, rc + rb):
        match = match & (lcols[lhs_d][:, None] == rcols[rhs_d][None, :])
    prod = lhs.data.astype(dtype)[:, None] * rhs.data.astype(dtype)[None, :]
    data = jnp.where(match, prod, jnp.zeros((), dtype)).astype(out.dtype)
    pairs = lhs.nse * rhs.nse
    lfree = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    out_cols = ([jnp.broadcast_to(lcols[d][:, None], match.shape) for d in lb + tuple(lfree)]
                + [jnp.broadcast_to(rcols[d][None, :], match.shape) for d in rfree])
    out_cols = [jnp.where(match, c, jnp.asarray(s, c.dtype))
                for c, s in zip(out_cols, out.shape)]
    if out_cols:
        indices = jnp.stack(out_cols, axis=-1).reshape(pairs, len(out_cols))
    else:
        indices = jnp.zeros((pairs, 0), lhs.indices.dtype)
    return BCOO((data.reshape(pairs), indices), shape=out.shape)


def _valid(cols: list, shape: Sequence[int], nse: int) -> Any:
    """Whether each entry is stored (every coordinate in bounds; safe_columns ran already)."""
    ok = jnp.ones((nse,), bool)
    for c, s in zip(cols, shape):
        ok = ok & (c != s)
    return ok
