"""Checks of dot_general through cuBLAS (cuda/runtime/cublas.py). Under the simulator the one
cuBLAS call is replaced by a numpy model of cublasGemmStridedBatchedEx's contract (column-major
operands, op N/T, leading dimensions and batch strides checked as cuBLAS checks them), so the
argument mapping from numbax's row-major layouts is what is tested; on a real card the library
itself runs (float32 at TF32 by default, as JAX on Ampere and newer). numpy is the truth."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cuda.runtime import cublas
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from tests.compiler.cuda.sim_checks import check, close, gjit
from tests.compiler.cuda.sim_support import library_model

RNG = np.random.default_rng(47)


def _stored(buf: np.ndarray, offset: int, rows: int, cols: int, ld: int) -> np.ndarray:
    """The column-major rows x cols matrix at `offset` with leading dimension `ld`."""
    assert ld >= max(1, rows), ("cuBLAS: ld below the stored matrix's rows", ld, rows)
    index = offset + np.arange(rows)[:, None] + np.arange(cols)[None, :] * ld
    return buf[index]


def model_call(op_a, op_b, m, n, k, a, a_type, lda, stride_a, b, b_type, ldb, stride_b, c,
               c_type, ldc, stride_c, batch, compute):
    """C[p] = op(A[p]) @ op(B[p]) in float64/complex128 arithmetic, as cuBLAS defines it."""
    assert cublas.OP_N in (op_a, op_b) or cublas.OP_T in (op_a, op_b)
    assert ldc >= max(1, m) and compute in cublas._SCALAR
    host_a, host_b, host_c = a.copy_to_host(), b.copy_to_host(), c.copy_to_host()
    wide = np.complex128 if host_c.dtype.kind == "c" else np.float64
    for p in range(batch):
        am = (_stored(host_a, p * stride_a, m, k, lda) if op_a == cublas.OP_N
              else _stored(host_a, p * stride_a, k, m, lda).T)
        bm = (_stored(host_b, p * stride_b, k, n, ldb) if op_b == cublas.OP_N
              else _stored(host_b, p * stride_b, n, k, ldb).T)
        product = am.astype(wide) @ bm.astype(wide)
        index = p * stride_c + np.arange(m)[:, None] + np.arange(n)[None, :] * ldc
        host_c[index] = product.astype(host_c.dtype)
    c.copy_to_device(host_c)


def cublas_model():
    """cuBLAS 'available', its call answered by the model (under the simulator only)."""
    return library_model(cublas, model_call)


@check
def cublas_layouts_batches_and_dtypes():
    x = RNG.normal(size=(7, 5))
    y = RNG.normal(size=(7, 6))
    z = RNG.normal(size=(6, 5))
    w = RNG.normal(size=(6, 7))
    p = RNG.normal(size=(3, 5, 4))
    q = RNG.normal(size=(3, 4, 6))
    r = RNG.normal(size=(5, 3, 4))
    cases = {
        "x@z.T": (lambda a, b: a @ b.T, (x, z)),
        "x.T@y": (lambda a, b: a.T @ b, (x, y)),
        "x.T@w.T": (lambda a, b: a.T @ b.T, (x, w)),
        "matvec": (lambda a, b: a @ b, (x, RNG.normal(size=5))),
        "vecmat": (lambda a, b: a @ b, (RNG.normal(size=7), x)),
        "inner": (lambda a, b: a @ b, (RNG.normal(size=9), RNG.normal(size=9))),
        "outer 1-deep": (lambda a, b: a @ b, (RNG.normal(size=(4, 1)), RNG.normal(size=(1, 3)))),
        "bij,bjk->bik": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (p, q)),
        "bij,bkj->bik": (lambda a, b: jnp.einsum("bij,bkj->bik", a, b), (p, p)),
        "ibj,bjk->bik": (lambda a, b: jnp.einsum("ibj,bjk->bik", a, b), (r, q)),
    }
    with cublas_model(), numbax.config.override("jax_default_matmul_precision", "highest"):
        for dt in (np.float32, np.float64, np.complex64):
            for name, (f, args) in cases.items():
                args = tuple(np.asarray(a, dt) if dt != np.complex64
                             else (a + 0.5j * a[::-1]).astype(dt) for a in args)
                fj = gjit(f)
                want = f(*[a.astype(np.complex128 if dt == np.complex64 else np.float64)
                           for a in args]).astype(dt)
                tol = 1e-5 if np.dtype(dt).itemsize <= 8 else 1e-12
                try:
                    close(fj(*args), want, rtol=tol, atol=tol)
                except AssertionError as e:
                    raise AssertionError(f"{name} {np.dtype(dt).name}: {e}") from None
                if cuda_runtime.simulator_enabled() or cublas.available():
                    assert "cb.gemm(" in fj.lower(*args).as_text(), name


@check
def cublas_precision_and_fallbacks():
    x = RNG.normal(size=(16, 12)).astype(np.float32)
    y = RNG.normal(size=(12, 8)).astype(np.float32)
    want = x.astype(np.float64) @ y.astype(np.float64)
    with cublas_model(), numbax.config.override("jax_default_matmul_precision", None):
        default = gjit(lambda a, b: a @ b)
        highest = gjit(lambda a, b: jnp.matmul(a, b, precision="highest"))
        text_d, text_h = default.lower(x, y).as_text(), highest.lower(x, y).as_text()
        assert f"compute={cublas.COMPUTE_32F_FAST_TF32}" in text_d, text_d
        assert f"compute={cublas.COMPUTE_32F}" in text_h
        err_h = np.abs(np.asarray(highest(x, y)) - want).max() / np.abs(want).max()
        err_d = np.abs(np.asarray(default(x, y)) - want).max() / np.abs(want).max()
        assert err_h < 1e-5, err_h
        assert err_d < 5e-3, err_d  # TF32 on a card: 10 mantissa bits; exact in the model
        # integer products, empty contractions and float32 -> float64 accumulation keep the
        # tiled kernel
        xi = RNG.integers(-4, 4, (5, 6)).astype(np.int32)
        f = gjit(lambda a: a.T @ a)
        close(f(xi), xi.T @ xi, rtol=0, atol=0)
        assert "cb.gemm(" not in f.lower(xi).as_text()
        e = gjit(jnp.matmul)
        close(e(np.zeros((3, 0), np.float32), np.zeros((0, 2), np.float32)),
              np.zeros((3, 2), np.float32), rtol=0, atol=0)
        up = gjit(lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float64))
        close(up(x, y), want, rtol=1e-12, atol=1e-12)
        assert "cb.gemm(" not in up.lower(x, y).as_text()


@check
def cublas_in_a_training_step():
    """grad of an MLP (products with transposed operands in the backward pass)."""
    from numbax import grad

    w1 = RNG.normal(size=(6, 5)) * 0.3
    w2 = RNG.normal(size=(5, 3)) * 0.3
    x = RNG.normal(size=(8, 6))

    def loss(w1, w2, x):
        return jnp.sum(jnp.tanh(jnp.tanh(x @ w1) @ w2) ** 2)

    with cublas_model():
        g1, g2 = gjit(grad(loss, argnums=(0, 1)))(w1, w2, x)
    h = np.tanh(x @ w1)
    o = np.tanh(h @ w2)
    d_o = 2 * o * (1 - o ** 2)
    close(g2, h.T @ d_o, rtol=1e-10, atol=1e-12)
    close(g1, x.T @ ((d_o @ w2.T) * (1 - h ** 2)), rtol=1e-10, atol=1e-12)
