"""Checks of dot_general through cuBLAS (cuda/runtime/cublas.py). Under the simulator the one
cuBLAS call is replaced by a numpy model of cublasGemmStridedBatchedEx's contract (column-major
operands, op N/T, leading dimensions and batch strides checked as cuBLAS checks them), so the
argument mapping from numbax's row-major layouts is what is tested; on a real card the library
itself runs (float32 at TF32 by default, as JAX on Ampere and newer). numpy is the truth."""
from __future__ import annotations

import contextlib
import functools
import re
import warnings

import numpy as np
import scipy.special

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cuda.runtime import cublas, cublaslt
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
                    # (a real product of one-deep contractions is a broadcast multiply:
                    # passes._outer_dot, on every backend)
                    outer = name == "outer 1-deep" and dt != np.complex64
                    assert ("cb.gemm(" in fj.lower(*args).as_text()) != outer, name


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


def model_lt_call(op_a, op_b, m, n, k, a, ab_type, lda, b, ldb, bias, c, c_type, ldc, compute,
                  epilogue):
    """C = epilogue(op(A) @ op(B) + bias) in float64, the bias one value per row of the
    column-major C, as cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS / RELU_BIAS / GELU_BIAS
    defines it (ReLU keeps NaN, as cuBLASLt's does on an H200; GELU is the tanh form)."""
    assert epilogue in (cublaslt.EPILOGUE_BIAS, cublaslt.EPILOGUE_RELU_BIAS,
                        cublaslt.EPILOGUE_GELU_BIAS)
    assert ldc >= max(1, m) and compute in cublas._SCALAR and ab_type == c_type
    host_a, host_b, host_c = a.copy_to_host(), b.copy_to_host(), c.copy_to_host()
    am = _stored(host_a, 0, m, k, lda) if op_a == cublas.OP_N else _stored(host_a, 0, k, m, lda).T
    bm = _stored(host_b, 0, k, n, ldb) if op_b == cublas.OP_N else _stored(host_b, 0, n, k, ldb).T
    bias_host = bias.copy_to_host()
    assert bias_host.shape == (m,), (bias_host.shape, m)
    z = am.astype(np.float64) @ bm.astype(np.float64) + bias_host[:, None]
    if epilogue == cublaslt.EPILOGUE_RELU_BIAS:
        z = np.maximum(z, 0.0)
    if epilogue == cublaslt.EPILOGUE_GELU_BIAS:
        z = _gelu_tanh(z)
    host_c[np.arange(m)[:, None] + np.arange(n)[None, :] * ldc] = z.astype(host_c.dtype)
    c.copy_to_device(host_c)


def _gelu_tanh(z):
    """jax.nn.gelu's default (tanh) form in float64."""
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))


@contextlib.contextmanager
def cublaslt_model():
    """cuBLAS and cuBLASLt 'available', their calls answered by the models (simulator only)."""
    with cublas_model(), library_model(cublaslt, model_lt_call):
        yield


def _lt_plans(text: str) -> list[int]:
    """The epilogues of the cuBLASLt calls in a lowered program (empty where none)."""
    return [int(e) for e in re.findall(r"^G\d+ = lt\.LtGemm\(.*, (\d+)\)$", text, re.M)]


def _uses_lt() -> bool:
    return cuda_runtime.simulator_enabled() or cublaslt.available()


@check
def cublaslt_dense_layer_epilogues():
    """relu(x @ w + b) and x @ w + b as one cuBLASLt call each (float32, float16, transposed
    operands, NaN through ReLU), a tanh layer's bias in its product, and the chains that must
    stay apart: the product or the sum read twice, a column bias, a -0.0 ReLU. numpy is the
    truth; on a card cuBLASLt itself runs (TF32 by default: its own tolerance)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(33, 20)).astype(np.float32)
    w1 = (rng.normal(size=(20, 17)) * 0.3).astype(np.float32)
    b1 = rng.normal(size=17).astype(np.float32)
    w2 = (rng.normal(size=(17, 6)) * 0.3).astype(np.float32)
    b2 = rng.normal(size=6).astype(np.float32)
    x[4, 3] = np.nan  # row 4 of every later layer is NaN: ReLU keeps it
    b1[2] = -50.0  # column 2 of the first layer is all ReLU zeros

    def mlp(act):
        def f(x, w1, b1, w2, b2):
            return act(x @ w1 + b1) @ w2 + b2
        return f

    def np_mlp(act):
        def f(x, w1, b1, w2, b2):
            f64 = [a.astype(np.float64) for a in (x, w1, b1, w2, b2)]
            return (act(f64[0] @ f64[1] + f64[2]) @ f64[3] + f64[4]).astype(np.float32)
        return f

    args = (x, w1, b1, w2, b2)
    cases = {
        "relu": (mlp(lambda z: jnp.maximum(z, 0.0)), np_mlp(lambda z: np.maximum(z, 0.0)),
                 [cublaslt.EPILOGUE_RELU_BIAS, cublaslt.EPILOGUE_BIAS]),
        "nn.relu": (mlp(numbax.nn.relu), np_mlp(lambda z: np.maximum(z, 0.0)),
                    [cublaslt.EPILOGUE_RELU_BIAS, cublaslt.EPILOGUE_BIAS]),
        "tanh": (mlp(jnp.tanh), np_mlp(np.tanh), [cublaslt.EPILOGUE_BIAS] * 2),
        "nn.gelu": (mlp(numbax.nn.gelu), np_mlp(_gelu_tanh),
                    [cublaslt.EPILOGUE_GELU_BIAS, cublaslt.EPILOGUE_BIAS]),
        "exact gelu": (mlp(functools.partial(numbax.nn.gelu, approximate=False)),
                       np_mlp(lambda z: 0.5 * z * scipy.special.erfc(-z / np.sqrt(2))),
                       [cublaslt.EPILOGUE_BIAS] * 2),
        "gelu and its input": (lambda x, w1, b1, w2, b2: (lambda z: (numbax.nn.gelu(z), z))(
                                   x @ w1 + b1),
                               lambda x, w1, b1, w2, b2: (lambda z: (_gelu_tanh(z), z))(
                                   x.astype(np.float64) @ w1 + b1),
                               [cublaslt.EPILOGUE_BIAS]),
        "-0.0 relu": (mlp(lambda z: jnp.maximum(-0.0, z)), np_mlp(lambda z: np.maximum(z, 0.0)),
                      [cublaslt.EPILOGUE_BIAS] * 2),
        "sum read twice": (lambda x, w1, b1, w2, b2: (x @ w1 + b1) * jnp.maximum(x @ w1 + b1, 0),
                           lambda x, w1, b1, w2, b2: ((x @ w1 + b1) * np.maximum(x @ w1 + b1, 0)),
                           [cublaslt.EPILOGUE_BIAS]),
        "product read twice": (lambda x, w1, b1, w2, b2: (lambda p: (p + b1, p * 2))(x @ w1),
                               lambda x, w1, b1, w2, b2: (x @ w1 + b1, x @ w1 * 2), []),
        "column bias": (lambda x, w1, b1, w2, b2: x.T[:17] @ x + b1[:, None],
                        lambda x, w1, b1, w2, b2: x.T[:17] @ x + b1[:, None], []),
    }
    tol = 1e-5 if cuda_runtime.simulator_enabled() else 5e-3  # TF32 on a card
    with cublaslt_model():
        for name, (f, want_f, epilogues_wanted) in cases.items():
            fj = gjit(f)
            got, want = fj(*args), want_f(*args)
            for g, wv in zip(got if isinstance(got, tuple) else (got,),
                             want if isinstance(want, tuple) else (want,)):
                try:
                    close(g, np.asarray(wv, np.float32), rtol=tol, atol=tol)
                except AssertionError as e:
                    raise AssertionError(f"{name}: {e}") from None
            if _uses_lt():
                assert _lt_plans(fj.lower(*args).as_text()) == epilogues_wanted, name
        # at full float32 precision the card's GELU is the tanh form (the erf form differs
        # by up to 5e-4 at |z| ~ 2)
        fg = gjit(lambda x, w, b: numbax.nn.gelu(jnp.dot(x, w, precision="highest") + b))
        z = x.astype(np.float64) @ w1 + b1
        close(fg(x, w1, b1), _gelu_tanh(z).astype(np.float32), rtol=2e-5, atol=2e-5)
        if _uses_lt():
            assert _lt_plans(fg.lower(x, w1, b1).as_text()) == [cublaslt.EPILOGUE_GELU_BIAS]
        # both operands read transposed (contracting x's rows and w's columns)
        xt, wt = np.ascontiguousarray(x.T), np.ascontiguousarray(w1.T)
        ft = gjit(lambda xt, wt, b: jnp.maximum(
            lax.dot_general(xt, wt, (((0,), (1,)), ((), ()))) + b, 0.0))
        want = np.maximum(x.astype(np.float64) @ w1 + b1, 0).astype(np.float32)
        close(ft(xt, wt, b1), want, rtol=tol, atol=tol)
        if _uses_lt():
            assert _lt_plans(ft.lower(xt, wt, b1).as_text()) == [cublaslt.EPILOGUE_RELU_BIAS]
        h = tuple(a.astype(np.float16) for a in (x[:, :16], w1[:16, :16], b1[:16]))
        fh = gjit(lambda x, w, b: jnp.maximum(x @ w + b, 0))
        want = np.maximum(h[0].astype(np.float64) @ h[1] + h[2], 0).astype(np.float16)
        close(fh(*h), want, rtol=2e-2, atol=2e-2)
        if _uses_lt():
            assert _lt_plans(fh.lower(*h).as_text()) == [cublaslt.EPILOGUE_RELU_BIAS]
        # the primitive bound by hand on float64 operands, which cuBLASLt does not take (the
        # card refused the call with CUBLAS_STATUS_INVALID_VALUE): it runs on the host
        from numbax._src.compiler.epilogues import gemm_epilogue_p
        xd, wd, bd = (a.astype(np.float64) for a in (x, w1, b1))
        fd = gjit(lambda x, w, b: gemm_epilogue_p.bind(
            x, w, b, dimension_numbers=(((1,), (0,)), ((), ())), precision=None,
            preferred_element_type=None, activation="relu"))
        with numbax.config.override("jax_enable_x64", True), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "runs on the host"
            close(fd(xd, wd, bd), np.maximum(xd @ wd + bd, 0), rtol=1e-12, atol=1e-12)
            assert _lt_plans(fd.lower(xd, wd, bd).as_text()) == []
        # switched off: plain products, the bias in a loop nest
        with numbax.config.override("cuda_epilogues", False):
            off = gjit(mlp(jnp.tanh))
            close(off(*args), np_mlp(np.tanh)(*args), rtol=tol, atol=tol)
            assert _lt_plans(off.lower(*args).as_text()) == []


@check
def cublaslt_in_a_relu_training_step():
    """grad of a ReLU MLP and of a GELU one: the backward pass reads the sum for the
    activation's derivative, so only the bias joins each forward product; gradients against
    numpy's."""
    from numbax import grad

    rng = np.random.default_rng(6)
    w1 = (rng.normal(size=(6, 5)) * 0.5).astype(np.float32)
    b1 = rng.normal(size=5).astype(np.float32) * 0.1
    w2 = (rng.normal(size=(5, 3)) * 0.5).astype(np.float32)
    x = rng.normal(size=(8, 6)).astype(np.float32)

    def loss(w1, b1, w2, x):
        return jnp.sum((jnp.maximum(x @ w1 + b1, 0.0) @ w2) ** 2)

    tol = 1e-4 if cuda_runtime.simulator_enabled() else 2e-2
    with cublaslt_model():
        f = gjit(grad(loss, argnums=(0, 1, 2)))
        g1, gb1, g2 = f(w1, b1, w2, x)
        if _uses_lt():
            assert _lt_plans(f.lower(w1, b1, w2, x).as_text()) == [cublaslt.EPILOGUE_BIAS]
    z = x.astype(np.float64) @ w1 + b1
    h = np.maximum(z, 0)
    o = h @ w2
    d_o = 2 * o
    dz = (d_o @ w2.T) * (z > 0)
    close(g2, (h.T @ d_o).astype(np.float32), rtol=tol, atol=tol)
    close(g1, (x.T @ dz).astype(np.float32), rtol=tol, atol=tol)
    close(gb1, dz.sum(0).astype(np.float32), rtol=tol, atol=tol)

    # GELU: its derivative reads the sum too, so again only the bias joins the product
    def gelu_loss(w1, b1, w2, x):
        return jnp.sum((numbax.nn.gelu(x @ w1 + b1) @ w2) ** 2)

    with cublaslt_model():
        f = gjit(grad(gelu_loss, argnums=(0, 1, 2)))
        g1, gb1, g2 = f(w1, b1, w2, x)
        if _uses_lt():
            assert _lt_plans(f.lower(w1, b1, w2, x).as_text()) == [cublaslt.EPILOGUE_BIAS]
    scale, cube = np.sqrt(2 / np.pi), 0.044715
    t = np.tanh(scale * (z + cube * z ** 3))
    h = 0.5 * z * (1 + t)
    o = h @ w2
    d_o = 2 * o
    dz = (d_o @ w2.T) * (0.5 * (1 + t) + 0.5 * z * (1 - t ** 2) * scale * (1 + 3 * cube * z ** 2))
    close(g2, (h.T @ d_o).astype(np.float32), rtol=tol, atol=tol)
    close(g1, (x.T @ dz).astype(np.float32), rtol=tol, atol=tol)
    close(gb1, dz.sum(0).astype(np.float32), rtol=tol, atol=tol)
