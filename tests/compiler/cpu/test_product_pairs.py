"""Two independent matrix products run together (runtime/gemm_pairs.py's `matmul_pair`,
library.dot_pair, the CPU driver's pairing of adjacent products): each product's bits are
those it has alone, whatever the threads; the pair runs only where both would run on numbax's
GEMM on threads of a quiet machine."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu
from numbax._src.compiler.cpu.runtime import gemm_pairs, library
from numbax._src.compiler.cpu.runtime import threads as rt_threads

RNG = np.random.default_rng(41)


def _matrix(shape, dtype, transposed=False):
    a = RNG.normal(size=shape[::-1] if transposed else shape).astype(dtype)
    return a.T if transposed else a


PAIRS = [  # (x1, y1 shapes), (x2, y2 shapes), which operands are stored transposed
    (((512, 128), (128, 512)), ((128, 512), (512, 512)), (True, False, False, True)),
    (((37, 300), (300, 45)), ((1, 20), (20, 33)), (False, True, True, False)),
    (((5, 0), (0, 4)), ((30, 40), (40, 50)), (False, False, False, False)),
    (((700, 64), (64, 70)), ((13, 513), (513, 200)), (True, True, False, False)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", PAIRS)
def test_a_pair_gives_each_product_its_own_bits(dtype, shapes):
    (s1, t1), (s2, t2), flags = shapes[0], shapes[1], shapes[2]
    x1, y1 = _matrix(s1, dtype, flags[0]), _matrix(t1, dtype, flags[1])
    x2, y2 = _matrix(s2, dtype, flags[2]), _matrix(t2, dtype, flags[3])
    alone = gemm_cpu.matmul(x1, y1, 1), gemm_cpu.matmul(x2, y2, 1)
    for threads in (1, 2, 3):
        with rt_threads.running(min(threads, rt_threads.pool_size())):
            got = gemm_pairs.matmul_pair(x1, y1, x2, y2, threads)
        for g, a in zip(got, alone, strict=True):
            assert g.dtype == dtype and g.flags.c_contiguous
            np.testing.assert_array_equal(g, a)
    tol = 3e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[0], x1.astype(np.float64) @ y1, rtol=tol,
                               atol=tol * np.sqrt(max(x1.shape[1], 1)))


def test_a_pair_of_other_operands_is_refused_by_name():
    x = _matrix((8, 6), np.float32)
    with pytest.raises(ValueError, match="matmul_pair takes two products"):
        gemm_pairs.matmul_pair(x, x.T, x.astype(np.float64), x.T.astype(np.float64), 2)
    with pytest.raises(ValueError, match="matmul_pair takes two products"):
        gemm_pairs.matmul_pair(x, x, x, x.T, 2)


def _spy_pairs(monkeypatch):
    calls = []
    real = gemm_pairs.matmul_pair
    monkeypatch.setattr(gemm_pairs, "matmul_pair", lambda *a: calls.append(a[4]) or real(*a))
    return calls


@pytest.mark.parametrize("case", ["quiet", "busy", "narrow", "small", "few rows"])
def test_dot_pair_runs_together_only_where_both_would_thread_on_the_gemm(case, monkeypatch):
    """Paired: a quiet machine's products on the GEMM's threads, a small batch's eight rows
    too (library._fills_tile_rows); not: a busy machine, a 10-wide product (BLAS), two rows
    (too few multiply-adds for threads). numpy's products every time."""
    calls = _spy_pairs(monkeypatch)
    monkeypatch.setattr(library, "own_gemm_host", lambda: True)
    monkeypatch.setattr(library, "own_gemm", lambda macs: True)
    monkeypatch.setattr(library, "_one_thread_on_blas", lambda macs: False)
    threads = min(2, rt_threads.pool_size())
    monkeypatch.setattr(library, "gemm_threads", lambda macs, site=None: threads)
    monkeypatch.setattr(rt_threads, "busy", lambda: case == "busy")  # (not the test machine's)
    h, d = _matrix((128, 512), np.float32), _matrix((128, 512), np.float32)
    w = _matrix((512, 10 if case == "narrow" else 512), np.float32)
    if case in ("small", "few rows"):
        h, d = (h[:2], d[:2]) if case == "small" else (h[:8], d[:8])
    first, second = (h.T, d, 512 * len(h) * 512), (h, w, len(h) * 512 * w.shape[1])
    got = library.dot_pair(first, second)
    paired = case in ("quiet", "few rows") and threads > 1
    assert calls == ([threads] if paired else [])
    np.testing.assert_allclose(got[0], h.T.astype(np.float64) @ d, rtol=3e-5, atol=3e-4)
    np.testing.assert_allclose(got[1], h.astype(np.float64) @ w, rtol=3e-5, atol=3e-4)


def _driver(f, *args):
    return f.lower(*args).compile().as_text()


def test_the_driver_pairs_adjacent_independent_products_and_keeps_their_bits(monkeypatch):
    """A backward pass's h1ᵀ @ d2 and d2 @ W2ᵀ (both read d2, neither the other) run as one
    lw.dot_pair; with the pair run one product after the other the outputs are the same bits."""
    h, d = _matrix((96, 300), np.float32), _matrix((96, 200), np.float32)
    w = _matrix((300, 200), np.float32)
    f = numbax.jit(lambda h, d, w: (h.T @ jnp.tanh(d), jnp.tanh(d) @ w.T))
    assert "lw.dot_pair((" in _driver(f, h, d, w)
    paired = [np.asarray(o) for o in f(h, d, w)]
    monkeypatch.setattr(library, "dot_pair", lambda a, b: (library.dot(*a), library.dot(*b)))
    apart = [np.asarray(o) for o in numbax.jit(lambda h, d, w: (
        h.T @ jnp.tanh(d), jnp.tanh(d) @ w.T))(h, d, w)]
    for p, a in zip(paired, apart, strict=True):
        np.testing.assert_array_equal(p, a)
    np.testing.assert_allclose(paired[1], np.tanh(d.astype(np.float64)) @ w.T, rtol=3e-5,
                               atol=3e-4)


def test_a_product_reading_the_one_before_is_not_paired():
    x, w = _matrix((64, 100), np.float32), _matrix((100, 100), np.float32)
    f = numbax.jit(lambda x, w: (x @ w) @ w)
    assert "lw.dot_pair" not in _driver(f, x, w)
    np.testing.assert_allclose(np.asarray(f(x, w)), (x.astype(np.float64) @ w) @ w,
                               rtol=1e-4, atol=1e-3)


def test_a_training_step_pairs_its_backward_products():
    """The MLP step's h1ᵀ @ d2 and d2 @ W2ᵀ pair; the step's parameters are those of numpy's
    float64 step within float32 rounding."""
    sizes = [30, 40, 40, 5]
    params = [(_matrix((a, b), np.float32) * 0.2, np.zeros(b, np.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]
    x, y = _matrix((64, 30), np.float32), np.eye(5, dtype=np.float32)[RNG.integers(0, 5, 64)]

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        logits = h @ params[-1][0] + params[-1][1]
        return -jnp.mean(jnp.sum(y * numbax.nn.log_softmax(logits), axis=-1))

    step = numbax.jit(lambda p, x, y: numbax.tree.map(
        lambda a, g: a - 0.1 * g, p, numbax.grad(loss)(p, x, y)))
    assert "lw.dot_pair((" in _driver(step, params, x, y)
    got = step(params, x, y)

    def loss64(flat):
        ps = [(flat[k], flat[k + 1]) for k in range(0, len(flat), 2)]
        h = x.astype(np.float64)
        for w, b in ps[:-1]:
            h = np.tanh(h @ w + b)
        z = h @ ps[-1][0] + ps[-1][1]
        z = z - z.max(-1, keepdims=True)
        return -np.mean(np.sum(y * (z - np.log(np.exp(z).sum(-1, keepdims=True))), -1))

    flat = [a.astype(np.float64) for pair in params for a in pair]
    w2, eps = flat[2], 1e-6
    fd = np.zeros_like(w2)
    for i in [(0, 0), (3, 7), (39, 39)]:
        e = np.zeros_like(w2)
        e[i] = eps
        plus, minus = list(flat), list(flat)
        plus[2], minus[2] = w2 + e, w2 - e
        fd[i] = (loss64(plus) - loss64(minus)) / (2 * eps)
        assert abs(float(np.asarray(got[1][0])[i]) - (w2[i] - 0.1 * fd[i])) < 1e-5
