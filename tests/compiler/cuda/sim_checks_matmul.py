"""Checks of the CUDA matmul (cuda_matmul) and of dot_general's operand layouts under the CUDA
simulator (and on a real card through tests/compiler/cuda/sim_checks.py). numpy is the truth.

The simulator's Config uses tiny tiles (large: 2x2 threads of 2x2 outputs, 4-deep slices;
small: 2x2 threads of 1x2 outputs, 2-deep) with mm_sms=2 and mm_split_k=4, so small shapes
exercise partial tiles, both tiles, split-K and the strided (transposed) operand reads."""
from __future__ import annotations

import numpy as np

import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cuda.kernels import matmul as cuda_matmul
from numbax._src.compiler.cuda.loops import Config
from tests.compiler.cuda.sim_checks import check, close, gjit

RNG = np.random.default_rng(31)
SIM = Config(sim=True)


def _tol(dt):
    return (1e-5, 1e-5) if np.dtype(dt) == np.float32 else (1e-12, 1e-12)


@check
def matmul_odd_sizes_and_tiles():
    # (m, k, n): partial tiles, K not a multiple of the slice depth, a 1-wide side
    shapes = ((1, 1, 1), (5, 7, 3), (9, 5, 10), (8, 9, 8), (3, 1, 6), (1, 13, 1), (2, 20, 3))
    for dt in (np.float32, np.float64):
        for m, k, n in shapes:
            a = RNG.normal(size=(m, k)).astype(dt)
            b = RNG.normal(size=(k, n)).astype(dt)
            rtol, atol = _tol(dt)
            try:
                close(gjit(jnp.matmul)(a, b), a @ b, rtol=rtol, atol=atol)
            except AssertionError as e:
                raise AssertionError(f"{m}x{k}x{n} {np.dtype(dt).name}: {e}") from None
    # which paths those shapes took: the large tile, the small one, split-K
    pick = lambda m, k, n, dt: cuda_matmul.choose_tiles(  # noqa: E731
        cuda_matmul.MatmulShape(1, m, n, k, (dt, dt, dt)), SIM)
    assert pick(8, 9, 8, np.float32)[0] == SIM.mm_big
    assert pick(8, 9, 8, np.float64)[0] == SIM.mm_small
    assert pick(2, 20, 3, np.float32)[1] > 1, pick(2, 20, 3, np.float32)


@check
def matmul_transposed_operands_no_transpose_kernel():
    x = RNG.normal(size=(7, 5)).astype(np.float32)
    y = RNG.normal(size=(7, 6)).astype(np.float32)
    z = RNG.normal(size=(6, 5)).astype(np.float32)
    w = RNG.normal(size=(6, 7)).astype(np.float32)
    cases = {"xT@y": (lambda x, y: x.T @ y, (x, y), x.T @ y),
             "x@yT": (lambda x, z: x @ z.T, (x, z), x @ z.T),
             "xT@yT": (lambda x, w: x.T @ w.T, (x, w), x.T @ w.T),
             "long K split": (lambda a, b: a.T @ b, (RNG.normal(size=(30, 2)),
                                                     RNG.normal(size=(30, 3))), None)}
    for name, (f, args, want) in cases.items():
        if want is None:
            want = f(*args)
        fj = gjit(f)
        try:
            close(fj(*args), want, rtol=1e-5, atol=1e-5)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
        text = fj.lower(*args).as_text()
        assert "| transpose" not in text, f"{name} launched a transpose kernel"


@check
def matmul_batch_dims_and_layouts():
    for dt in (np.float32, np.float64):
        rtol, atol = _tol(dt)
        p = RNG.normal(size=(3, 5, 4)).astype(dt)
        q = RNG.normal(size=(3, 4, 6)).astype(dt)
        r = RNG.normal(size=(5, 3, 4)).astype(dt)  # batch in the middle: strided batch reads
        cases = [("bij,bjk->bik", p, q), ("bij,bkj->bik", p, p), ("bji,bjk->bik", q, q),
                 ("ibj,bjk->bik", r, q), ("bij,bkj->ikb", p, p)]
        for spec, a, b in cases:
            got = gjit(lambda a, b, spec=spec: jnp.einsum(spec, a, b))(a, b)
            try:
                close(got, np.einsum(spec, a, b), rtol=rtol, atol=atol)
            except AssertionError as e:
                raise AssertionError(f"{spec} {np.dtype(dt).name}: {e}") from None
    # free dims not adjacent in memory: gathered by a transpose kernel first, still right
    x = RNG.normal(size=(2, 3, 4))
    v = RNG.normal(size=3)
    f = gjit(lambda x, v: jnp.tensordot(x, v, axes=([1], [0])))
    close(f(x, v), np.tensordot(x, v, axes=([1], [0])), rtol=1e-12, atol=1e-12)
    assert "| transpose" in f.lower(x, v).as_text()


@check
def matmul_tiny_and_empty_contraction_and_ints():
    a = RNG.normal(size=(4, 1)).astype(np.float32)
    b = RNG.normal(size=(1, 5)).astype(np.float32)
    close(gjit(jnp.matmul)(a, b), a @ b, rtol=1e-6, atol=1e-6)
    e = gjit(jnp.matmul)(np.zeros((3, 0)), np.zeros((0, 2)))  # K = 0: zeros
    close(e, np.zeros((3, 2)), rtol=0, atol=0)
    ai = RNG.integers(-5, 5, (5, 7)).astype(np.int32)
    bi = RNG.integers(-5, 5, (7, 3)).astype(np.int32)
    close(gjit(jnp.matmul)(ai, bi), ai @ bi, rtol=0, atol=0)
    ai = ai.astype(np.int64)
    close(gjit(lambda a: a.T @ a)(ai), ai.T @ ai, rtol=0, atol=0)
    # preferred_element_type: float32 operands, float64 accumulation and result
    x = RNG.normal(size=(6, 9)).astype(np.float32)
    y = RNG.normal(size=(9, 4)).astype(np.float32)
    got = gjit(lambda x, y: lax.dot(x, y, preferred_element_type=jnp.float64))(x, y)
    close(got, x.astype(np.float64) @ y.astype(np.float64), rtol=1e-12, atol=1e-12)


@check
def matmul_in_grad_and_scan_rows_in_place():
    from numbax import grad
    from numbax import lax as nlax

    w = RNG.normal(size=(5, 3))
    x = RNG.normal(size=(8, 5))
    g = gjit(grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)))(w, x)
    t = np.tanh(x @ w)
    close(g, x.T @ (2 * t * (1 - t ** 2)), rtol=1e-10, atol=1e-12)

    def loop(c, xs):  # ys: a per-step vector, a per-step scalar, and a carry passed through
        return nlax.scan(lambda c, x: (c * 0.5 + x, (c + x, jnp.sum(c), c)), c, xs)

    c0 = RNG.normal(size=4)
    xs = RNG.normal(size=(6, 4))
    c, (ya, yb, yc) = gjit(loop)(c0, xs)
    want_c, wa, wb, wc = c0.copy(), [], [], []
    for xi in xs:
        wa.append(want_c + xi)
        wb.append(want_c.sum())
        wc.append(want_c.copy())
        want_c = want_c * 0.5 + xi
    close(c, want_c, rtol=1e-12)
    close(ya, np.array(wa), rtol=1e-12)
    close(yb, np.array(wb), rtol=1e-12)
    close(yc, np.array(wc), rtol=1e-12)
    rev = gjit(lambda c, xs: nlax.scan(lambda c, x: (c + x, c * x), c, xs, reverse=True))
    c, ys = rev(c0, xs)
    want_c, want_y = c0.copy(), np.zeros_like(xs)
    for i in range(len(xs) - 1, -1, -1):
        want_y[i] = want_c * xs[i]
        want_c = want_c + xs[i]
    close(c, want_c, rtol=1e-12)
    close(ys, want_y, rtol=1e-12)


@check
def matmul_real_card_tiles():
    """The real card's tiles: the 128x128 float32 tile with partial edge tiles and split-K.
    Under the simulator only the choice is checked (the shapes are too big to simulate)."""
    from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

    real = Config(sim=False)
    cases = ((1541, 67, 1539, np.float32, True, 1), (200, 3000, 100, np.float32, False, 11),
             (130, 2000, 70, np.float64, False, 7))
    for m, k, n, dt, big, splits in cases:
        tile, s, kc = cuda_matmul.choose_tiles(
            cuda_matmul.MatmulShape(1, m, n, k, (dt, dt, dt)), real)
        assert (tile == real.mm_big) == big and s == splits, (m, k, n, tile, s, kc)
        assert s == 1 or (s - 1) * kc < k <= s * kc, (k, s, kc)
    if cuda_runtime.simulator_enabled():
        return
    for m, k, n, dt, _, _ in cases:
        a = RNG.normal(size=(k, m)).astype(dt)  # read transposed: xT @ y
        b = RNG.normal(size=(k, n)).astype(dt)
        want = a.T.astype(np.float64) @ b.astype(np.float64)
        got = np.asarray(gjit(lambda a, b: a.T @ b)(a, b)).astype(np.float64)
        tol = 1e-4 if dt == np.float32 else 1e-12
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < tol, (m, k, n, np.dtype(dt).name, err)
