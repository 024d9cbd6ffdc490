"""numbax's lax.linalg, numpy.linalg and scipy.linalg against JAX 0.10.2's recorded outputs
(tests/data/make_linalg_reference.py): the same LAPACK conventions (eigenvalue order, Schur
form, qr and svd signs, Householder packing), special matrices and derivatives."""
import json
import pathlib

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
import numbax.scipy.linalg as jsl
from numbax.lax import linalg as ll

REF = json.loads(pathlib.Path(__file__).with_name("data").joinpath(
    "linalg_jax_reference.json").read_text())


def dec(x):
    if isinstance(x, list):
        return [dec(v) for v in x]
    if "re" in x:
        return np.asarray(x["re"]) + 1j * np.asarray(x["im"])
    return np.asarray(x["v"], dtype=x["dtype"])


X = {k: dec(v) for k, v in REF["inputs"].items()}


def _flat(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _flat(t)]
    return [np.asarray(tree)]


def compare(got, want, tol=1e-9, same_dtype=True):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype or not same_dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _dl_du():
    return np.concatenate([[0.0], X["e"]]), np.concatenate([X["e"], [0.0]])


LAX = {
    "eig_a": lambda: ll.eig(X["a"]),
    "eig_c": lambda: ll.eig(X["c"]),
    "schur_a": lambda: ll.schur(X["a"]),
    "schur_c": lambda: ll.schur(X["c"]),
    "qr_tall": lambda: ll.qr(X["tall"]),
    "qr_wide_thin": lambda: ll.qr(X["wide"], full_matrices=False),
    "qr_pivot_tall": lambda: ll.qr(X["tall"], pivoting=True, full_matrices=False),
    "qr_c": lambda: ll.qr(X["c"]),
    "svd_tall": lambda: ll.svd(X["tall"], full_matrices=False),
    "svd_c": lambda: ll.svd(X["c"]),
    "eigh_herm": lambda: ll.eigh(X["herm"]),
    "eigh_spd": lambda: ll.eigh(X["spd"]),
    "hessenberg_a": lambda: ll.hessenberg(X["a"]),
    "hessenberg_c": lambda: ll.hessenberg(X["c"]),
    "tridiagonal_spd": lambda: ll.tridiagonal(X["spd"]),
    "tridiagonal_herm_upper": lambda: ll.tridiagonal(X["herm"], lower=False),
    "lu_wide": lambda: ll.lu(X["wide"]),
    "lu_tall": lambda: ll.lu(X["tall"]),
    "lu_pivots_to_permutation": lambda: ll.lu_pivots_to_permutation(
        np.array([2, 3, 3], np.int32), 5),
    "householder_product": lambda: ll.householder_product(
        *(np.asarray(v) for v in (jnp.linalg.qr(X["tall"], mode="raw")[0].T,
                                  jnp.linalg.qr(X["tall"], mode="raw")[1]))),
    "ormqr_left_t": lambda: ll.ormqr(jnp.linalg.qr(X["tall"], mode="raw")[0].T,
                                     jnp.linalg.qr(X["tall"], mode="raw")[1],
                                     np.eye(5)[:, :2], left=True, transpose=True),
    "qdwh_tall": lambda: ll.qdwh(X["tall"]),
    "tridiagonal_solve": lambda: ll.tridiagonal_solve(_dl_du()[0], X["d"] + 4, _dl_du()[1],
                                                      X["d"][:, None]),
    "cholesky_update": lambda: ll.cholesky_update(np.linalg.cholesky(X["spd"]).T, X["w"]),
    "symmetric_product": lambda: ll.symmetric_product(X["tall"], np.eye(5), alpha=2.0,
                                                      beta=0.5, symmetrize_output=True),
    "cholesky_herm": lambda: ll.cholesky(X["herm"]),
    "triangular_solve_conj": lambda: ll.triangular_solve(
        np.tril(X["c"]) + 4 * np.eye(4), X["cb"], left_side=True, lower=True,
        transpose_a=True, conjugate_a=True),
}

la = jnp.linalg
NUMPY = {
    "eig_a": lambda: tuple(la.eig(X["a"])),
    "eigvals_c": lambda: la.eigvals(X["c"]),
    "det_c": lambda: la.det(X["c"]),
    "slogdet_c": lambda: tuple(la.slogdet(X["c"])),
    "slogdet_qr_a": lambda: tuple(la.slogdet(X["a"], method="qr")),
    "pinv_tall_c": lambda: la.pinv(X["tall"] + 1j * X["tall"][::-1]),
    "matrix_rank_rtol": lambda: la.matrix_rank(X["sing"], rtol=0.5),
    "matrix_rank_sing": lambda: la.matrix_rank(X["sing"]),
    "lstsq_c": lambda: tuple(la.lstsq(X["c"][:, :3], X["cb"])),
    "cond_sing_1": lambda: la.cond(np.array([[1.0, 2.0], [2.0, 4.0]]), 1),
    "svd_hermitian": lambda: tuple(la.svd(X["spd"] - 8 * np.eye(4), hermitian=True)),
    "qr_raw": lambda: tuple(la.qr(X["tall"], mode="raw")),
    "norm_c_nuc": lambda: la.norm(X["c"], "nuc"),
    "norm_c_2": lambda: la.norm(X["c"], 2),
    "vector_norm_c_3": lambda: la.vector_norm(X["c"], ord=3, axis=0),
    "tensorinv": lambda: la.tensorinv(X["spd"].reshape(4, 2, 2), ind=1),
    "cross": lambda: la.cross(X["a"][:, :3], X["c"][:, :3]),
    "grad_det_sing": lambda: numbax.grad(la.det)(X["sing"]),
    "grad_det_rank2": lambda: numbax.grad(la.det)(X["sing"][:, :2] @ X["sing"][:2, :]),
    "grad_slogdet_c": lambda: numbax.grad(lambda m: la.slogdet(m)[1])(X["c"]),
    "jvp_eigvals": lambda: numbax.jvp(la.eigvals, (X["spd"] + X["a"],), (X["a"],))[1],
    "grad_svdvals_c": lambda: numbax.grad(lambda m: jnp.sum(la.svd(m, compute_uv=False)))(
        X["c"]),
    "grad_cholesky_herm": lambda: numbax.grad(lambda m: jnp.sum(la.cholesky(m)).real)(
        X["herm"]),
    "grad_pinv": lambda: numbax.grad(lambda m: jnp.sum(la.pinv(m) ** 2))(X["tall"]),
}

SCIPY = {
    "expm_a": lambda: jsl.expm(X["a"]),
    "expm_big": lambda: jsl.expm(10 * X["a"]),
    "expm_c": lambda: jsl.expm(X["c"]),
    "expm_frechet": lambda: jsl.expm_frechet(X["a"], X["spd"]),
    "grad_expm": lambda: numbax.grad(lambda m: jnp.sum(jsl.expm(m)))(X["a"]),
    "sqrtm_spd": lambda: jsl.sqrtm(X["spd"]),
    "sqrtm_a": lambda: jsl.sqrtm(X["a"]),
    "funm_sin": lambda: jsl.funm(X["a"], jnp.sin),
    "funm_exp_err": lambda: jsl.funm(X["a"], jnp.exp, disp=False),
    "rsf2csf": lambda: jsl.rsf2csf(*jsl.schur(X["a"])),
    "schur_complex": lambda: jsl.schur(X["a"], output="complex"),
    "solve_sylvester": lambda: jsl.solve_sylvester(X["a"], X["spd"], X["b"] @ X["b"].T),
    "polar_qdwh": lambda: jsl.polar(X["tall"]),
    "polar_svd_left": lambda: jsl.polar(X["wide"], side="left", method="svd"),
    "eigh_tridiagonal": lambda: jsl.eigh_tridiagonal(X["d"], X["e"], eigvals_only=True),
    "eigh_tridiagonal_i": lambda: jsl.eigh_tridiagonal(X["d"], X["e"], eigvals_only=True,
                                                       select="i", select_range=(1, 3)),
    "lu_wide": lambda: jsl.lu(X["wide"]),
    "lu_permute_l": lambda: jsl.lu(X["tall"], permute_l=True),
    "cho_solve_upper": lambda: jsl.cho_solve(jsl.cho_factor(X["herm"]), X["cb"]),
    "lu_solve_t1": lambda: jsl.lu_solve(jsl.lu_factor(X["c"]), X["cb"], trans=1),
    "lu_solve_t2": lambda: jsl.lu_solve(jsl.lu_factor(X["c"]), X["cb"], trans=2),
    "solve_pos": lambda: jsl.solve(X["spd"], X["b"], assume_a="pos"),
    "grad_solve_pos": lambda: numbax.grad(lambda m: jnp.sum(jsl.solve(m, X["b"],
                                                                      assume_a="pos")))(X["spd"]),
    "solve_triangular_c": lambda: jsl.solve_triangular(np.triu(X["c"]) + 4 * np.eye(4),
                                                       X["cb"], trans="C"),
    "qr_multiply_left": lambda: jsl.qr_multiply(X["tall"], np.eye(3)[:, :2], mode="left"),
    "qr_multiply_right_conj": lambda: jsl.qr_multiply(X["c"], X["cb"].T, conjugate=True),
    "hessenberg_q": lambda: jsl.hessenberg(X["a"], calc_q=True),
    "special_pascal": lambda: jsl.pascal(5),
    "special_pascal_lower": lambda: jsl.pascal(4, "lower"),
    "special_invpascal": lambda: jsl.invpascal(5),
    "special_invpascal_upper": lambda: jsl.invpascal(4, "upper"),
    "special_helmert": lambda: jsl.helmert(5),
    "special_helmert_full": lambda: jsl.helmert(4, full=True),
    "special_hadamard": lambda: jsl.hadamard(8),
    "special_dft": lambda: jsl.dft(5),
    "special_dft_sqrtn": lambda: jsl.dft(4, "sqrtn"),
    "special_hilbert": lambda: jsl.hilbert(4),
    "special_invhilbert": lambda: jsl.invhilbert(5),
    "special_companion": lambda: jsl.companion(X["poly"]),
    "special_fiedler_companion": lambda: jsl.fiedler_companion(X["poly"]),
    "special_fiedler": lambda: jsl.fiedler(X["d"]),
    "special_leslie": lambda: jsl.leslie(X["d"], X["e"]),
    "special_circulant": lambda: jsl.circulant(X["d"]),
    "special_toeplitz_c": lambda: jsl.toeplitz(X["c"][0]),
    "special_toeplitz_cr": lambda: jsl.toeplitz(X["d"], X["e"]),
    "special_hankel": lambda: jsl.hankel(X["d"]),
    "special_hankel_cr": lambda: jsl.hankel(X["d"], X["e"]),
    "special_block_diag": lambda: jsl.block_diag(X["a"][:2], 3.0, X["d"][:3]),
    **{f"special_convolution_matrix_{m}": (lambda m=m: jsl.convolution_matrix(X["poly"], 3, m))
       for m in ("full", "same", "valid")},
}

# Recorded values JAX computes less exactly than numbax does (float32 binomials, a float
# inverse-Hilbert formula), or iterations that converge to the same answer by other paths.
LOOSE = {"special_pascal": 1e-5, "special_pascal_lower": 1e-5, "special_invhilbert": 1e-6,
         "qdwh_tall": 1e-7, "polar_qdwh": 1e-7, "grad_pinv": 1e-7}


# JAX's pascal is float32 whatever the precision mode; numbax's the default float dtype.
OTHER_DTYPE = {"special_pascal", "special_pascal_lower"}


def _schur_gauge(t_q):
    """A Schur form (T, Q) is unique up to a diagonal unitary D (T -> Dᴴ T D, Q -> Q D), and
    LAPACK builds pick different D: fix it by making Q's first row real and non-negative."""
    t, q = (np.asarray(a) for a in t_q)
    first = q[0]
    d = np.where(np.abs(first) > 1e-12, np.conj(first) / np.maximum(np.abs(first), 1e-300), 1)
    return np.conj(d)[:, None] * t * d[None, :], q * d[None, :]


# Records whose factors are unique only up to a phase per column (compared in one gauge).
GAUGE = {"schur_a", "schur_c", "schur_complex"}


@pytest.mark.parametrize("family,name", [("lax", k) for k in LAX] + [("numpy", k) for k in NUMPY]
                         + [("scipy", k) for k in SCIPY])
def test_matches_jax(family, name):
    table = {"lax": LAX, "numpy": NUMPY, "scipy": SCIPY}[family]
    got, want = table[name](), dec(REF[family][name])
    if name in GAUGE:
        got, want = _schur_gauge(got), _schur_gauge(want)
    compare(got, want, LOOSE.get(name, 1e-9), same_dtype=name not in OTHER_DTYPE)


def test_every_record_is_checked():
    for family, table in (("lax", LAX), ("numpy", NUMPY), ("scipy", SCIPY)):
        assert set(REF[family]) == set(table), family
