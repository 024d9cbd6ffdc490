"""Records JAX's linear algebra outputs into linalg_jax_reference.json (run once, with jax).

    /work/jaxenv/bin/python tests/data/make_linalg_reference.py

The numbax tests (tests/test_linalg_jax_reference.py) read the JSON only, so they run without
jax. Recorded with jax_enable_x64=True on CPU; the inputs are stored next to the outputs.
Complex arrays are stored as {"re": ..., "im": ...}.
"""
import json
import pathlib

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OUT = pathlib.Path(__file__).with_name("linalg_jax_reference.json")


def enc(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return {"re": x.real.tolist(), "im": x.imag.tolist(), "dtype": str(x.dtype)}
    return {"v": x.tolist(), "dtype": str(x.dtype)}


def enc_tree(tree):
    if isinstance(tree, (tuple, list)):
        return [enc_tree(t) for t in tree]
    return enc(tree)


def inputs() -> dict:
    rng = np.random.default_rng(2024)
    a = rng.standard_normal((4, 4))
    c = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    spd = a @ a.T + 4 * np.eye(4)
    herm = c @ c.conj().T + 4 * np.eye(4)
    tall = rng.standard_normal((5, 3))
    wide = rng.standard_normal((3, 5))
    sing = rng.standard_normal((4, 3)) @ rng.standard_normal((3, 4))
    return {"a": a, "c": c, "spd": spd, "herm": herm, "tall": tall, "wide": wide,
            "sing": sing, "b": rng.standard_normal((4, 2)), "cb": c[:, :2] * 1j,
            "d": rng.standard_normal(5), "e": rng.standard_normal(4),
            "w": rng.standard_normal(4), "poly": np.array([2.0, -3.0, 0.5, 1.0, 4.0])}


def record_lax(x: dict) -> dict:
    ll = lax.linalg
    out = {}
    out["eig_a"] = ll.eig(x["a"])
    out["eig_c"] = ll.eig(x["c"])
    out["schur_a"] = ll.schur(x["a"])
    out["schur_c"] = ll.schur(x["c"])
    out["qr_tall"] = ll.qr(x["tall"])
    out["qr_wide_thin"] = ll.qr(x["wide"], full_matrices=False)
    out["qr_pivot_tall"] = ll.qr(x["tall"], pivoting=True, full_matrices=False)
    out["qr_c"] = ll.qr(x["c"])
    out["svd_tall"] = ll.svd(x["tall"], full_matrices=False)
    out["svd_c"] = ll.svd(x["c"])
    out["eigh_herm"] = ll.eigh(x["herm"])
    out["eigh_spd"] = ll.eigh(x["spd"])
    out["hessenberg_a"] = ll.hessenberg(x["a"])
    out["hessenberg_c"] = ll.hessenberg(x["c"])
    out["tridiagonal_spd"] = ll.tridiagonal(x["spd"])
    out["tridiagonal_herm_upper"] = ll.tridiagonal(x["herm"], lower=False)
    out["lu_wide"] = ll.lu(x["wide"])
    out["lu_tall"] = ll.lu(x["tall"])
    out["lu_pivots_to_permutation"] = ll.lu_pivots_to_permutation(
        np.array([2, 3, 3], np.int32), 5)
    h, taus = jnp.linalg.qr(x["tall"], mode="raw")
    out["householder_product"] = ll.householder_product(h.T, taus)
    out["ormqr_left_t"] = ll.ormqr(h.T, taus, np.eye(5)[:, :2], left=True, transpose=True)
    out["qdwh_tall"] = ll.qdwh(x["tall"])
    dl = np.concatenate([[0.0], x["e"]])
    du = np.concatenate([x["e"], [0.0]])
    out["tridiagonal_solve"] = ll.tridiagonal_solve(dl, x["d"] + 4, du, x["d"][:, None])
    r = np.linalg.cholesky(x["spd"]).T
    out["cholesky_update"] = ll.cholesky_update(r, x["w"])
    out["symmetric_product"] = ll.symmetric_product(x["tall"], np.eye(5), alpha=2.0, beta=0.5,
                                                    symmetrize_output=True)
    out["cholesky_herm"] = ll.cholesky(x["herm"])
    out["triangular_solve_conj"] = ll.triangular_solve(
        np.tril(x["c"]) + 4 * np.eye(4), x["cb"], left_side=True, lower=True,
        transpose_a=True, conjugate_a=True)
    return out


def record_numpy(x: dict) -> dict:
    la = jnp.linalg
    out = {}
    out["eig_a"] = tuple(la.eig(x["a"]))
    out["eigvals_c"] = la.eigvals(x["c"])
    out["det_c"] = la.det(x["c"])
    out["slogdet_c"] = tuple(la.slogdet(x["c"]))
    out["slogdet_qr_a"] = tuple(la.slogdet(x["a"], method="qr"))
    out["pinv_tall_c"] = la.pinv(x["tall"] + 1j * x["tall"][::-1])
    out["matrix_rank_rtol"] = la.matrix_rank(x["sing"], rtol=0.5)
    out["matrix_rank_sing"] = la.matrix_rank(x["sing"])
    out["lstsq_c"] = tuple(la.lstsq(x["c"][:, :3], x["cb"]))
    out["cond_sing_1"] = la.cond(np.array([[1.0, 2.0], [2.0, 4.0]]), 1)
    out["svd_hermitian"] = tuple(la.svd(x["spd"] - 8 * np.eye(4), hermitian=True))
    out["qr_raw"] = tuple(la.qr(x["tall"], mode="raw"))
    out["norm_c_nuc"] = la.norm(x["c"], "nuc")
    out["norm_c_2"] = la.norm(x["c"], 2)
    out["vector_norm_c_3"] = la.vector_norm(x["c"], ord=3, axis=0)
    out["tensorinv"] = la.tensorinv(x["spd"].reshape(4, 2, 2), ind=1)
    out["cross"] = la.cross(x["a"][:, :3], x["c"][:, :3])
    out["grad_det_sing"] = jax.grad(la.det)(x["sing"])
    out["grad_det_rank2"] = jax.grad(la.det)(x["sing"][:, :2] @ x["sing"][:2, :])
    out["grad_slogdet_c"] = jax.grad(lambda m: la.slogdet(m)[1])(x["c"])
    out["jvp_eigvals"] = jax.jvp(la.eigvals, (x["spd"] + x["a"],), (x["a"],))[1]
    out["grad_svdvals_c"] = jax.grad(lambda m: jnp.sum(la.svd(m, compute_uv=False)))(x["c"])
    out["grad_cholesky_herm"] = jax.grad(lambda m: jnp.sum(la.cholesky(m)).real)(x["herm"])
    out["grad_pinv"] = jax.grad(lambda m: jnp.sum(la.pinv(m) ** 2))(x["tall"])
    return out


def record_scipy(x: dict) -> dict:
    out = {}
    out["expm_a"] = jsl.expm(x["a"])
    out["expm_big"] = jsl.expm(10 * x["a"])
    out["expm_c"] = jsl.expm(x["c"])
    out["expm_frechet"] = jsl.expm_frechet(x["a"], x["spd"])
    out["grad_expm"] = jax.grad(lambda m: jnp.sum(jsl.expm(m)))(x["a"])
    out["sqrtm_spd"] = jsl.sqrtm(x["spd"])
    out["sqrtm_a"] = jsl.sqrtm(x["a"])
    out["funm_sin"] = jsl.funm(x["a"], jnp.sin)
    out["funm_exp_err"] = jsl.funm(x["a"], jnp.exp, disp=False)
    t, z = jsl.schur(x["a"])
    out["rsf2csf"] = jsl.rsf2csf(t, z)
    out["schur_complex"] = jsl.schur(x["a"], output="complex")
    out["solve_sylvester"] = jsl.solve_sylvester(x["a"], x["spd"], x["b"] @ x["b"].T)
    out["polar_qdwh"] = jsl.polar(x["tall"])
    out["polar_svd_left"] = jsl.polar(x["wide"], side="left", method="svd")
    out["eigh_tridiagonal"] = jsl.eigh_tridiagonal(x["d"], x["e"], eigvals_only=True)
    out["eigh_tridiagonal_i"] = jsl.eigh_tridiagonal(x["d"], x["e"], eigvals_only=True,
                                                     select="i", select_range=(1, 3))
    out["lu_wide"] = jsl.lu(x["wide"])
    out["lu_permute_l"] = jsl.lu(x["tall"], permute_l=True)
    out["cho_solve_upper"] = jsl.cho_solve(jsl.cho_factor(x["herm"]), x["cb"])
    lu_piv = jsl.lu_factor(x["c"])
    out["lu_solve_t1"] = jsl.lu_solve(lu_piv, x["cb"], trans=1)
    out["lu_solve_t2"] = jsl.lu_solve(lu_piv, x["cb"], trans=2)
    out["solve_pos"] = jsl.solve(x["spd"], x["b"], assume_a="pos")
    out["grad_solve_pos"] = jax.grad(lambda m: jnp.sum(jsl.solve(m, x["b"], assume_a="pos")))(
        x["spd"])
    out["solve_triangular_c"] = jsl.solve_triangular(np.triu(x["c"]) + 4 * np.eye(4), x["cb"],
                                                     trans="C")
    out["qr_multiply_left"] = jsl.qr_multiply(x["tall"], np.eye(3)[:, :2], mode="left")
    out["qr_multiply_right_conj"] = jsl.qr_multiply(x["c"], x["cb"].T, conjugate=True)
    out["hessenberg_q"] = jsl.hessenberg(x["a"], calc_q=True)
    special = {
        "pascal": jsl.pascal(5), "pascal_lower": jsl.pascal(4, "lower"),
        "invpascal": jsl.invpascal(5), "invpascal_upper": jsl.invpascal(4, "upper"),
        "helmert": jsl.helmert(5), "helmert_full": jsl.helmert(4, full=True),
        "hadamard": jsl.hadamard(8), "dft": jsl.dft(5), "dft_sqrtn": jsl.dft(4, "sqrtn"),
        "hilbert": jsl.hilbert(4), "invhilbert": jsl.invhilbert(5),
        "companion": jsl.companion(x["poly"]),
        "fiedler_companion": jsl.fiedler_companion(x["poly"]),
        "fiedler": jsl.fiedler(x["d"]),
        "leslie": jsl.leslie(x["d"], x["e"]),
        "circulant": jsl.circulant(x["d"]),
        "toeplitz_c": jsl.toeplitz(x["c"][0]),
        "toeplitz_cr": jsl.toeplitz(x["d"], x["e"]),
        "hankel": jsl.hankel(x["d"]),
        "hankel_cr": jsl.hankel(x["d"], x["e"]),
        "block_diag": jsl.block_diag(x["a"][:2], 3.0, x["d"][:3]),
    }
    for mode in ("full", "same", "valid"):
        special[f"convolution_matrix_{mode}"] = jsl.convolution_matrix(x["poly"], 3, mode)
    out.update({f"special_{k}": v for k, v in special.items()})
    return out


def main() -> None:
    x = inputs()
    data = {"jax_version": jax.__version__,
            "inputs": {k: enc(v) for k, v in x.items()},
            "lax": {k: enc_tree(v) for k, v in record_lax(x).items()},
            "numpy": {k: enc_tree(v) for k, v in record_numpy(x).items()},
            "scipy": {k: enc_tree(v) for k, v in record_scipy(x).items()}}
    OUT.write_text(json.dumps(data))
    print(f"wrote {OUT} ({OUT.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
