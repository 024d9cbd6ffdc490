"""Updates in the CPU's products (compiler/epilogues.py `_update`, runtime/gemm_epilogues.py):
`w - lr * (h.T @ d)` (an SGD step), `x + h @ w` (a residual) and their kin computed as
base + scale * C on each tile of numbax's GEMM (or in one pass after a BLAS product), against
float64 numpy, the unfused program's bits and the rewrite's own refusals."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import epilogues
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu
from numbax._src.compiler.cpu.runtime import gemm_pairs, library

RNG = np.random.default_rng(35)
# shapes: whole tiles; ragged rows and columns; several k blocks (KC = 256); one row
SHAPES = [(24, 64, 64), (37, 300, 45), (130, 600, 70), (1, 20, 33)]


def _operands(m, k, n, dtype, transpose_x=False):
    x = RNG.normal(size=(k, m) if transpose_x else (m, k)).astype(dtype)
    w = (RNG.normal(size=(k, n)) / np.sqrt(k)).astype(dtype)
    base = RNG.normal(size=(m, n)).astype(dtype)
    return (x.T if transpose_x else x), w, base


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [-0.01, 1.0, -1.0])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_gemm_adds_the_scaled_product_to_the_base(dtype, scale, m, k, n):
    x, w, base = _operands(m, k, n, dtype, transpose_x=m % 2 == 1)
    kept = base.copy()
    want = base.astype(np.float64) + scale * (x.astype(np.float64) @ w.astype(np.float64))
    tol = 2e-5 if dtype == np.float32 else 1e-12
    plain = gemm_cpu.matmul(x, w, 1)
    for threads in (1, 3):
        got = gemm_cpu.matmul(x, w, threads, bias=base, activation="update", scale=scale)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
        # the same sums as the plain product, then base + scale * C as numpy rounds it
        np.testing.assert_array_equal(got, base + dtype(scale) * plain)
    np.testing.assert_array_equal(base, kept)  # the base is read, never written


def test_an_empty_contraction_gives_the_base():
    base = RNG.normal(size=(5, 4)).astype(np.float32)
    got = gemm_cpu.matmul(np.ones((5, 0), np.float32), np.ones((0, 4), np.float32), 1,
                          bias=base, activation="update", scale=-3.0)
    np.testing.assert_array_equal(got, base)


def test_a_base_of_the_wrong_shape_or_dtype_is_named():
    x, w, base = _operands(4, 8, 6, np.float32)
    with pytest.raises(ValueError, match=r"base of an update must be a float32 array of "
                                         r"shape \(4, 6\); got float32\(6,\)"):
        gemm_cpu.matmul(x, w, 1, bias=base[0], activation="update")
    with pytest.raises(ValueError, match="base of an update must be a float32"):
        gemm_cpu.matmul(x, w, 1, bias=base.astype(np.float64), activation="update")


@pytest.mark.parametrize("route", ["numbax", "blas"])
def test_library_dot_updates_on_either_product(route):
    x, w, base = _operands(200, 96, 300, np.float32, transpose_x=True)
    with numbax.config.override("cpu_matmul", route):
        got = library.dot(x, w, 200 * 96 * 300, base, "update", -0.5)
    want = base.astype(np.float64) - 0.5 * (x.astype(np.float64) @ w.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-4)
    base_t = np.asfortranarray(base)  # a base in another layout is read as the same matrix
    got_t = library.dot(x, w, 200 * 96 * 300, base_t, "update", -0.5)
    np.testing.assert_allclose(got_t, want, rtol=2e-5, atol=2e-4)


def test_a_busy_machines_pooled_product_updates_too():
    """The native pool's parts (gemm_tasks.py, a busy machine's parallel arm) read the scale
    from the task's parameter block."""
    from numbax._src.compiler.cpu.runtime import gemm_tasks, native_pool

    if not native_pool.available():
        pytest.skip("no native pool on this host")
    for dtype in (np.float32, np.float64):
        x, w, base = _operands(300, 280, 200, dtype, transpose_x=True)
        got = gemm_tasks.matmul(x, w, base, "update", -0.25)
        np.testing.assert_array_equal(got, base + dtype(-0.25) * gemm_cpu.matmul(x, w, 1))


@pytest.mark.parametrize("which", ["first", "second", "both"])
def test_a_pair_of_products_keeps_each_its_epilogue(which):
    (x1, w1, base1), (x2, w2, bias2) = _operands(64, 128, 96, np.float32, True), \
        _operands(64, 96, 80, np.float32)
    bias2 = bias2[0]
    first = (base1, "update", -0.01) if which != "second" else ()
    second = (bias2, "tanh") if which != "first" else ()
    got1, got2 = gemm_pairs.matmul_pair(x1, w1, x2, w2, 2, first, second)
    want1 = gemm_cpu.matmul(x1, w1, 1, bias=first[0], activation="update", scale=-0.01) \
        if first else gemm_cpu.matmul(x1, w1, 1)
    want2 = gemm_cpu.matmul(x2, w2, 1, bias=bias2, activation="tanh") if second \
        else gemm_cpu.matmul(x2, w2, 1)
    np.testing.assert_array_equal(got1, want1)
    np.testing.assert_array_equal(got2, want2)


def _spy(monkeypatch):
    """The epilogue of every `lw.dot` call from compiled drivers (alone or in a pair)."""
    calls, in_pair = [], []
    plain, pair = library.dot, library.dot_pair

    def dot(x, y, macs, bias=None, activation="none", scale=1.0):
        if not in_pair:  # (a pair that runs apart calls `dot` for each)
            calls.append(None if bias is None else (activation, scale))
        return plain(x, y, macs, bias, activation, scale)

    def dot_pair(first, second):
        calls.extend(None if len(a) == 3 else (a[4], a[5] if len(a) > 5 else 1.0)
                     for a in (first, second))
        in_pair.append(True)
        try:
            return pair(first, second)
        finally:
            in_pair.pop()

    monkeypatch.setattr(library, "dot", dot)
    monkeypatch.setattr(library, "dot_pair", dot_pair)
    return calls


def _batch():
    """h (batch 50 x 60 features), d (50 x 40), w (60 x 40): h.T @ d is w's gradient."""
    return [RNG.normal(size=s).astype(np.float32) for s in ((50, 60), (50, 40), (60, 40))]


UPDATES = {  # name -> (function of (h, d, w), the scale the product is fused with)
    "w - lr * g": (lambda h, d, w: w - 0.01 * (h.T @ d), -np.float32(0.01)),
    "w - g * lr": (lambda h, d, w: w - (h.T @ d) * 0.01, -np.float32(0.01)),
    "w + lr * g": (lambda h, d, w: w + 0.5 * jnp.dot(h.T, d), 0.5),
    "g * lr + w": (lambda h, d, w: (h.T @ d) * 0.5 + w, 0.5),
    "w - g": (lambda h, d, w: w - h.T @ d, -1.0),
    "residual": (lambda h, d, w: h.T @ d + w, 1.0),
}


@pytest.mark.parametrize("name", list(UPDATES))
def test_jit_fuses_updates_and_matches_the_unfused_program(name, monkeypatch):
    calls = _spy(monkeypatch)
    h, d, w = _batch()
    h[0, 0], w[1, 1] = np.nan, -0.0  # NaN propagates; the sign of a zero base survives
    fn, scale = UPDATES[name]
    fused = np.asarray(numbax.jit(fn)(h, d, w))
    assert calls == [("update", scale)]
    with numbax.config.override("cpu_epilogues", False):
        calls.clear()
        unfused = np.asarray(numbax.jit(lambda *a: fn(*a))(h, d, w))
        assert calls == [None]
    np.testing.assert_array_equal(fused, unfused)
    np.testing.assert_array_equal(np.signbit(fused), np.signbit(unfused))
    with numbax.disable_jit():  # and eager's values
        eager = np.asarray(fn(h, d, w))
    np.testing.assert_allclose(fused, eager, rtol=2e-5, atol=2e-5)


NOT_UPDATES = {
    "product read twice": lambda h, d, w, lr: (w - 0.01 * (h.T @ d), h.T @ d),
    "scaled product read twice": lambda h, d, w, lr: (w - 0.01 * (g := h.T @ d) + g, 0),
    "base a broadcast row": lambda h, d, w, lr: h.T @ d + w[0],
    "product minus base": lambda h, d, w, lr: h.T @ d - w,
    "traced rate": lambda h, d, w, lr: w - lr * (h.T @ d),
    "base of another dtype": lambda h, d, w, lr: w.astype(jnp.float64) - h.T @ d,
}


@pytest.mark.parametrize("name", list(NOT_UPDATES))
def test_other_readers_of_a_product_are_left_alone(name, monkeypatch):
    calls = _spy(monkeypatch)
    h, d, w = _batch()
    lr = np.float32(0.01)
    fn = NOT_UPDATES[name]
    got = numbax.jit(fn)(h, d, w, lr)
    assert all(c is None or c[0] != "update" for c in calls)
    with numbax.disable_jit():
        want = fn(h, d, w, lr)
    for a, b in zip(numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


def test_a_training_step_updates_in_its_products_with_the_unfused_bits(monkeypatch):
    """An MLP's SGD step: each weight's update joins its gradient's product (two of them in a
    pair with their input gradients), the new parameters equal the unfused program's bits,
    and the step's values eager's."""
    def init(m, n):
        return (RNG.normal(size=(m, n)) / np.sqrt(m)).astype(np.float32), \
            np.zeros(n, np.float32)

    params = [init(64, 96), init(96, 96), init(96, 10)]
    x = RNG.normal(size=(80, 64)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, 80)]

    def loss(params, x, y):
        (w1, b1), (w2, b2), (w3, b3) = params
        h = jnp.tanh(x @ w1 + b1)
        h = jnp.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        return -jnp.mean(jnp.sum(y * numbax.nn.log_softmax(logits), axis=-1))

    def step(params, x, y):
        g = numbax.grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]

    calls = _spy(monkeypatch)
    fused = numbax.jit(step)(params, x, y)
    assert sum(c == ("update", -np.float32(0.01)) for c in calls) == 3
    with numbax.config.override("cpu_epilogues", False):
        unfused = numbax.jit(lambda *a: step(*a))(params, x, y)
    with numbax.disable_jit():
        eager = step(params, x, y)
    for a, b, c in zip(numbax.tree_util.tree_leaves(fused), numbax.tree_util.tree_leaves(unfused),
                       numbax.tree_util.tree_leaves(eager)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-5, atol=1e-6)


def test_the_gpu_rule_leaves_updates_alone():
    """`fuse` without `updates` (the CUDA backend's call: cuBLASLt's epilogues take a bias row,
    not a whole addend) keeps the update's equations."""
    h, d, w = (RNG.normal(size=s).astype(np.float32) for s in ((8, 6), (8, 4), (6, 4)))
    jaxpr = numbax.make_jaxpr(lambda h, d, w: w - 0.01 * (h.T @ d))(h, d, w).jaxpr
    for updates, want in ((False, []), (True, ["update"])):
        fused = epilogues.fuse(jaxpr, epilogues.cpu_takes, updates=updates)
        assert [e.params["activation"] for e in fused.eqns
                if e.primitive is epilogues.gemm_epilogue_p] == want
