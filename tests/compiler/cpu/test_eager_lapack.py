"""Eager LAPACK calls follow the thread rule jitted ones do (compiler/cpu/backend.py
`_eager_lapack`, blas.lapack_threads): one BLAS thread for a small matrix, where OpenBLAS's
default threads beside busy processes made an eager eigh of 256^2 17-116 ms on the 2-core VM
instead of 3.4. The results are the jitted call's bits."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src import host_eval
from numbax._src.compiler.cpu.runtime import blas
from numbax._src.compiler.lowerings import linalg as linalg_lowerings

RNG = np.random.default_rng(23)


def test_every_lapack_primitive_runs_eagerly_under_the_rule(monkeypatch):
    assert set(host_eval.EAGER_RUNNERS) >= linalg_lowerings.LAPACK
    asked = []
    set_to = []
    real_call = blas.blas_call

    def lapack_threads(args, wait=True):
        asked.append(tuple(np.shape(a) for a in args))
        return 1

    def blas_call(fn, threads, *args):
        set_to.append(threads)
        return real_call(fn, threads, *args)

    monkeypatch.setattr(blas, "lapack_threads", lapack_threads)
    monkeypatch.setattr(blas, "blas_call", blas_call)
    s = RNG.normal(size=(40, 40)).astype(np.float32)
    s = s + s.T
    a = RNG.normal(size=(30, 20))
    w, v = jnp.linalg.eigh(s)
    singular = jnp.linalg.svd(a, compute_uv=False)
    lower = jnp.linalg.cholesky(s @ s.T + 40 * np.eye(40, dtype=np.float32))
    assert asked == [((40, 40),), ((30, 20),), ((40, 40),)] and set_to == [1, 1, 1]
    monkeypatch.undo()
    jw, jv = numbax.jit(jnp.linalg.eigh)(s)
    np.testing.assert_array_equal(np.asarray(w), np.asarray(jw))
    np.testing.assert_array_equal(np.asarray(v), np.asarray(jv))
    np.testing.assert_array_equal(np.asarray(singular), np.asarray(
        numbax.jit(lambda a: jnp.linalg.svd(a, compute_uv=False))(a)))
    np.testing.assert_allclose(np.asarray(lower) @ np.asarray(lower).T,
                               s @ s.T + 40 * np.eye(40), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(np.sort(np.asarray(w)), np.linalg.eigvalsh(s.astype(np.float64)),
                               rtol=1e-4, atol=1e-4)
