"""Matrix rows for the linear algebra primitives of linalg_{lu,qr,eig,svd}.py and the complex
and non-square cases of the older ones (their float rows sit in test_matrix.py). Outputs
are gauge-invariant where a decomposition is only defined up to signs or phases."""
from __future__ import annotations

import numpy as np

import numbax.numpy as jnp
from numbax._src.lax.linalg_qr import geqrf, qr_r_p
from numbax.lax import linalg
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(7)


def _normal(*shape):
    return RNG.standard_normal(shape)


def _cnormal(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _projectors(v):
    """v_k v_kᴴ for each column k: independent of the column's sign or phase."""
    return jnp.einsum("...ik,...jk->...kij", v, jnp.conj(v))


def _qr_phase_free(x):
    """q and r scaled by r's diagonal so that the phase of each Householder step cancels."""
    q, r = linalg.qr(x)
    d = jnp.diagonal(r)
    return q * d[None, :], r * jnp.conj(d)[:, None]


def cases() -> dict[str, list[Case]]:
    a = _normal(4, 4)
    c = _cnormal(4, 4)
    herm = c @ c.conj().T + 4 * np.eye(4)
    spd = a @ a.T + 4 * np.eye(4)
    tri = np.tril(_cnormal(4, 4)) + 4 * np.eye(4)
    upper = np.triu(_normal(4, 4)) + 3 * np.eye(4)
    d_main = _normal(5) + 4.0
    basis = _normal(4, 4) + 3 * np.eye(4)
    separated = basis @ np.diag([1.0, 3.0, 6.0, 10.0]) @ np.linalg.inv(basis)
    h, taus = (np.asarray(v) for v in geqrf(a))
    return {
        "cholesky": [Case(linalg.cholesky, (herm,), (0,), vmap=False)],
        "cholesky_update": [Case(linalg.cholesky_update, (upper, _normal(4)), (0, 1),
                                 vmap=False)],
        "symmetric_product": [Case(lambda x, y: linalg.symmetric_product(x, y, alpha=2.0,
                                                                         beta=-0.5),
                                   (_normal(3, 2), _normal(3, 3)), (0, 1))],
        "triangular_solve": [Case(lambda x, y: linalg.triangular_solve(
            x, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True),
            (tri, _cnormal(4, 2)), (0, 1))],
        "lu": [Case(lambda x: linalg.lu(x)[0], (_normal(3, 5),), (0,)),
               Case(lambda x: linalg.lu(x)[0], (_cnormal(5, 3),), (0,))],
        "lu_pivots_to_permutation": [Case(lambda p: linalg.lu_pivots_to_permutation(p, 5),
                                          (np.array([2, 3, 3], np.int32),))],
        "tridiagonal_solve": [Case(linalg.tridiagonal_solve,
                                   (_normal(5), d_main, _normal(5), _normal(5, 2)),
                                   (0, 1, 2, 3))],
        "qr": [Case(lambda x: linalg.qr(x, pivoting=True, full_matrices=False)[1], (_normal(5, 3),),
                    (0,)),
               Case(_qr_phase_free, (_cnormal(3, 5),), (0,))],
        # (internal: what jit runs for a qr whose Q nothing reads)
        "qr_r": [Case(lambda x: qr_r_p.bind(x, full_matrices=False), (_normal(5, 3),), (0,)),
                 Case(lambda x: qr_r_p.bind(x, full_matrices=True), (_normal(3, 5),), (0,))],
        "geqrf": [Case(lambda x: linalg.householder_product(*geqrf(x)), (a,))],
        "householder_product": [Case(linalg.householder_product, (h, taus))],
        "ormqr": [Case(lambda y: linalg.ormqr(h, taus, y, transpose=True), (_normal(4, 2),),
                       (0,))],
        "hessenberg": [Case(lambda x: jnp.triu(linalg.hessenberg(x)[0], -1), (a,))],
        "tridiagonal": [Case(lambda x: linalg.tridiagonal(x)[1:3], (spd,))],
        "eigh": [Case(lambda x: (linalg.eigh(x)[1], _projectors(linalg.eigh(x)[0])), (herm,),
                      (0,), vmap=False)],
        "eig": [Case(lambda x: linalg.eig(x, compute_left_eigenvectors=False,
                                          compute_right_eigenvectors=False)[0],
                     (separated,), (0,)),
                Case(lambda x: linalg.eig(x, compute_left_eigenvectors=False,
                                          enable_eigvec_derivs=True)[1], (c,), (0,))],
        "schur": [Case(lambda x: linalg.schur(x)[0], (separated,))],
        "svd": [Case(lambda x: linalg.svd(x, compute_uv=False), (_cnormal(4, 3),), (0,)),
                Case(lambda x: _projectors(linalg.svd(x, full_matrices=False)[0]),
                     (_cnormal(3, 4),), (0,))],
    }
