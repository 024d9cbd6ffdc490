"""jnp.matvec/vecmat against numpy 2.2's, and einsum_path's orders against numpy's."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(8)


def test_matvec_vecmat_match_numpy():
    m = RNG.normal(size=(2, 1, 3, 4))
    v = RNG.normal(size=(5, 4))
    np.testing.assert_allclose(jnp.matvec(m, v), np.matvec(m, v), rtol=1e-13)
    w = RNG.normal(size=(5, 3)) + 1j * RNG.normal(size=(5, 3))
    np.testing.assert_allclose(jnp.vecmat(w, m), np.vecmat(w, m), rtol=1e-13)
    g = numbax.grad(lambda v: jnp.matvec(m[0, 0], v).sum())(v[0])
    np.testing.assert_allclose(g, m[0, 0].sum(0), rtol=1e-13)


def test_einsum_path_orders_and_use():
    ops = [RNG.normal(size=s) for s in ((2, 3), (3, 4), (4, 5), (5, 2))]
    for opt in ("greedy", "optimal"):
        path, report = jnp.einsum_path("ij,jk,kl,lm->im", *ops, optimize=opt)
        want = np.einsum_path("ij,jk,kl,lm->im", *ops, optimize=opt)[0][1:]
        assert path == [tuple(p) for p in want] and "Complete contraction" in report
    path, _ = jnp.einsum_path("ij,jk,kl->il", *ops[:3])  # JAX's 'auto' = optimal here
    assert path == [(0, 1), (0, 1)]
    out = jnp.einsum("ij,jk,kl->il", *ops[:3], optimize=path)
    np.testing.assert_allclose(out, ops[0] @ ops[1] @ ops[2], rtol=1e-12)
    assert jnp.einsum_path("ij,jk", *ops[:2], optimize=False)[0] == [(0, 1)]


def test_contraction_bad_inputs():
    with pytest.raises(NumbaxValueError, match="contracted sizes"):
        jnp.matvec(np.ones((2, 3)), np.ones(2))
    with pytest.raises(NumbaxValueError, match="matrix and a"):
        jnp.vecmat(np.ones(3), np.ones(3))
    with pytest.raises(NumbaxTypeError, match="subscripts"):
        jnp.einsum_path(3, np.ones(2))
    with pytest.raises(NumbaxValueError, match="optimize"):
        jnp.einsum_path("i,i", np.ones(2), np.ones(2), optimize="fastest")
    with pytest.raises(NumbaxValueError, match="einsum_path"):
        jnp.einsum_path("ij,jk", np.ones((2, 3)), np.ones((4, 5)))
