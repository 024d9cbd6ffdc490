"""The jax.numpy / jax.ops calls whose JAX 0.10.2 outputs (x64 enabled) are recorded in
numpy_compat_jax_reference.json: the places where JAX's behaviour is its own (padding of
size= results, orderings, out-of-bounds rules, NaN conventions), so numpy cannot be the
truth. Each case takes the numpy module and the namespace under test (jax.numpy or
numbax.numpy) and, for jax.ops, the ops module."""
import numpy as np

X = np.array([3, 1, 3, 2, 1, 7])
F = np.array([[np.nan, 1.0, 3.0], [np.nan, np.nan, np.nan], [2.0, -1.0, 0.5]])
A = np.arange(6.0).reshape(2, 3)
SEG = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
IDS = np.array([0, 0, 2, 2, -1])

CASES = {
    "unique_size": lambda jnp, ops: jnp.unique(X, True, True, True, size=6),
    "unique_size_short": lambda jnp, ops: jnp.unique(X, True, True, True, size=2),
    "unique_fill": lambda jnp, ops: jnp.unique(X, return_index=True, size=6, fill_value=-1),
    "unique_all_nan": lambda jnp, ops: tuple(jnp.unique_all(np.array([1.0, np.nan, np.nan]))),
    "unique_rows": lambda jnp, ops: jnp.unique(np.array([[1, 2], [1, 2], [0, 5]]), axis=0,
                                               return_inverse=True, return_counts=True),
    "intersect_size": lambda jnp, ops: jnp.intersect1d(
        np.array([1, 2, 3, 2]), np.array([5, 3, 2]), size=4, return_indices=True),
    "setxor_size": lambda jnp, ops: jnp.setxor1d(np.array([1, 2, 3, 2]), np.array([5, 3, 2]),
                                                 size=4),
    "setdiff_size": lambda jnp, ops: jnp.setdiff1d(np.array([4, 1, 2, 3, 2]),
                                                   np.array([5, 3, 2]), size=4),
    "union_size": lambda jnp, ops: jnp.union1d(np.array([4, 1]), np.array([5, 3, 2]), size=7),
    "nonzero_size": lambda jnp, ops: jnp.nonzero(np.array([[0, 1, 0], [2, 0, 3]]), size=4,
                                                 fill_value=-1),
    "partition": lambda jnp, ops: jnp.partition(np.array([[5, 1, 4, 2, 3], [0, 9, 8, 7, 1]]),
                                                2, axis=1),
    "argpartition": lambda jnp, ops: jnp.argpartition(
        np.array([[5, 1, 4, 2, 3], [0, 9, 8, 7, 1]]), 1, axis=1),
    "unravel_oob": lambda jnp, ops: jnp.unravel_index(np.array([-3, -24, -25, 0, 23, 24]),
                                                      (2, 3, 4)),
    "getitem_oob": lambda jnp, ops: (jnp.asarray(A)[5], jnp.asarray(A)[-7, 1],
                                     jnp.asarray(A)[:, 10]),
    "at_get_fill": lambda jnp, ops: jnp.asarray(A).at[5].get(mode="fill", fill_value=-2.0),
    "at_set_drop": lambda jnp, ops: jnp.asarray(A).at[0, 7].set(9.0),
    "at_add_clip": lambda jnp, ops: jnp.asarray(A).at[0, 7].add(9.0, mode="clip"),
    "nanargmax": lambda jnp, ops: (jnp.nanargmax(F, axis=1), jnp.nanargmin(F, axis=1)),
    "var_ddof": lambda jnp, ops: (jnp.var(np.arange(3.0), ddof=3),
                                  jnp.var(np.arange(3.0), ddof=5)),
    "polydiv": lambda jnp, ops: jnp.polydiv(np.array([1.0, 2, 3, 4]), np.array([1.0, 2])),
    "polydiv_trim": lambda jnp, ops: jnp.polydiv(np.array([1.0, 3, 3, 1]), np.array([1.0, 1]),
                                                 trim_leading_zeros=True),
    "polyder_int": lambda jnp, ops: (jnp.polyder(np.array([3, 0, 2, 5])),
                                     jnp.polyint(np.array([3, 0, 2, 5]))),
    "poly_complex": lambda jnp, ops: jnp.poly(np.array([1j, -1j])),
    "quantile_int_lower": lambda jnp, ops: jnp.quantile(np.arange(10), 0.45, method="lower"),
    "nanquantile_allnan": lambda jnp, ops: jnp.nanquantile(F, np.array([0.2, 0.9]), axis=1,
                                                           method="nearest"),
    "compress_size": lambda jnp, ops: jnp.compress(
        np.array([True, False, True]), np.array([[1, 2], [3, 4], [5, 6]]), axis=0, size=3,
        fill_value=-1),
    "choose_clip": lambda jnp, ops: jnp.choose(np.array([0, 3, 1]),
                                               [np.arange(3), 10 + np.arange(3)], mode="clip"),
    "piecewise": lambda jnp, ops: jnp.piecewise(np.array([-1.0, 0.5, 2.0]),
                                                [np.array([True, False, False])], [0.0, 1.0]),
    "digitize_decreasing": lambda jnp, ops: jnp.digitize(
        np.array([0.1, 0.5, 0.5, 1.0, 2.0]), np.array([1.0, 0.5, 0.0]), right=True),
    "bincount_length": lambda jnp, ops: jnp.bincount(np.array([0, 1, 1, 3, 9]), length=5),
    "i0": lambda jnp, ops: jnp.i0(np.array([0.0, 0.5, 3.0, 19.0, 25.0, -40.0])),
    "kaiser": lambda jnp, ops: jnp.kaiser(7, 8.6),
    "frexp": lambda jnp, ops: jnp.frexp(np.array([0.0, 1.5, -3.0, np.inf, 1e300])),
    "fromfunction": lambda jnp, ops: jnp.fromfunction(lambda i, j: i * 10 + j, (2, 3),
                                                      dtype=int),
    "vectorize_sig": lambda jnp, ops: jnp.vectorize(
        lambda m, v: m @ v, signature="(m,n),(n)->(m)")(A, np.array([[1.0, 0, 2], [0, 1, 0]])),
    "ufunc_reduceat": lambda jnp, ops: jnp.add.reduceat(np.arange(8), np.array([0, 4, 1, 5])),
    "ufunc_outer": lambda jnp, ops: jnp.maximum.outer(np.arange(3), np.array([1, 0])),
    "einsum_path": lambda jnp, ops: np.array(jnp.einsum_path(
        "ij,jk,kl->il", np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))[0]),
    "isscalar": lambda jnp, ops: np.array([jnp.isscalar(1.0), jnp.isscalar(np.array(1)),
                                           jnp.isscalar(np.ones(1))]),
    "segment_sum": lambda jnp, ops: ops.segment_sum(SEG, IDS, 3),
    "segment_max_empty": lambda jnp, ops: ops.segment_max(SEG, IDS, 4),
    "segment_min_clip": lambda jnp, ops: ops.segment_min(SEG, IDS, 3, mode="clip"),
    "segment_prod": lambda jnp, ops: ops.segment_prod(SEG, IDS, 3),
}
