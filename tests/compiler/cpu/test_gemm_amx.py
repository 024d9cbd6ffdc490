"""bfloat16 products on AMX tiles (cpu/runtime/gemm_amx.py): the kernel against float64
products of the same bfloat16 values over layouts, edges and thread counts; what the compiler
keeps in bfloat16 for it; the float32 path where a host has no tiles. The kernel tests run
only on hosts with AMX (Sapphire Rapids and later Xeons)."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src import dtypes
from numbax._src.compiler.cpu.runtime import gemm_amx, library

BF16 = dtypes.bfloat16
F32 = np.dtype(np.float32)
needs_amx = pytest.mark.skipif(not gemm_amx.host_has_amx(), reason="no AMX tiles here")


def _operands(rng, m, k, n, a_transposed=False, b_transposed=False):
    """bfloat16 (m, k) and (k, n) operands, each C-contiguous or a transposed view."""
    a = rng.normal(size=(k, m) if a_transposed else (m, k)).astype(BF16)
    b = rng.normal(size=(n, k) if b_transposed else (k, n)).astype(BF16)
    return (a.T if a_transposed else a), (b.T if b_transposed else b)


def _check(got, a, b, out_dtype):
    """`got` against the float64 product of the bfloat16 values: float32 sums differ from it
    by at most k float32 roundings of the partial sums' magnitude, and a bfloat16 result by
    one more rounding to 8 significant bits."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    magnitude = np.abs(a64) @ np.abs(b64)
    bound = a.shape[1] * 2.0 ** -23 * magnitude
    if np.dtype(out_dtype) == BF16:
        bound = bound + 2.0 ** -8 * np.abs(exact)
    assert got.dtype == np.dtype(out_dtype) and got.shape == exact.shape
    err = np.abs(got.astype(np.float64) - exact)
    assert np.all(err <= bound), float((err - bound).max())


SHAPES = [
    (16, 32, 16),     # one tile each way (C padded to 32 x 32)
    (32, 64, 32),     # whole blocks: C written in place
    (17, 33, 19),     # every edge padded
    (128, 784, 512),  # an MLP layer: k not a multiple of 32
    (100, 96, 300),
    (64, 1000, 48),
    (40, 2100, 40),   # k in three blocks (gemm_amx.K_BLOCK): C loaded back between them
]


@needs_amx
@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("a_transposed,b_transposed", [(False, False), (True, False),
                                                       (False, True), (True, True)])
@pytest.mark.parametrize("out_dtype", [BF16, F32])
def test_matmul_matches_the_exact_product(m, k, n, a_transposed, b_transposed, out_dtype):
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    a, b = _operands(rng, m, k, n, a_transposed, b_transposed)
    a_before, b_before = a.copy(), b.copy()
    got = gemm_amx.matmul(a, b, out_dtype, 2)
    _check(got, a, b, out_dtype)
    np.testing.assert_array_equal(a.view(np.uint16), a_before.view(np.uint16))
    np.testing.assert_array_equal(b.view(np.uint16), b_before.view(np.uint16))


@needs_amx
@pytest.mark.parametrize("layout", ["c", "transposed", "strided"])
@pytest.mark.parametrize("out_dtype", [BF16, F32])
def test_stacks_of_products(layout, out_dtype):
    """A stack of products (attention's heads) in one call: each x[i] @ y[i] against the
    exact product, with C-contiguous matrices, transposed ones, and a stack of neither
    layout (copied first); odd sizes pad every matrix. Whole products a thread and parts of
    them give the same bits."""
    rng = np.random.default_rng(11)
    nb, m, k, n = 6, 40, 70, 24
    x = rng.normal(size=(nb, m, k)).astype(BF16)
    y = rng.normal(size=(nb, n, k)).astype(BF16).transpose(0, 2, 1)  # transposed matrices
    if layout == "c":
        y = np.ascontiguousarray(y)
    elif layout == "strided":
        x = rng.normal(size=(m, nb, k)).astype(BF16).transpose(1, 0, 2)  # heads not leading
    got = gemm_amx.matmul_batched(x, y, out_dtype, 3)  # whole products a thread (nb >= 2 x 3)
    assert got.shape == (nb, m, n)
    # parts of products from one list (nb < 2 x 4): the same sums in the same order
    np.testing.assert_array_equal(gemm_amx.matmul_batched(x, y, out_dtype, 4), got)
    for i in range(nb):
        _check(got[i], x[i], y[i], out_dtype)


def test_jitted_attention_scores_match_eager():
    """bfloat16 attention under jit (its batched products on the tiles where the host has
    them) against the same function run eagerly (float32 products rounded)."""
    rng = np.random.default_rng(12)
    q, k = (rng.normal(size=(2, 4, 40, 32)).astype(BF16) for _ in range(2))

    def scores(q, k):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8
        return numbax.nn.softmax(s.astype(jnp.float32), axis=-1)

    got = np.asarray(numbax.jit(scores)(q, k))
    want = np.asarray(scores(q, k))
    np.testing.assert_allclose(got, want, rtol=2 ** -6, atol=2 ** -9)


@needs_amx
@pytest.mark.parametrize("threads", [1, 3, 64])
def test_thread_counts_give_the_same_bits(threads):
    """Each block of C is one thread's whole sum over k: any thread count, the same bits."""
    rng = np.random.default_rng(1)
    a, b = _operands(rng, 96, 160, 200)
    want = gemm_amx.matmul(a, b, F32, 1)
    got = gemm_amx.matmul(a, b, F32, threads)
    np.testing.assert_array_equal(got, want)


@needs_amx
def test_odd_strides_and_odd_k_transposed_b():
    """A strided view (neither layout) is copied first; a transposed B of odd k has no 32-bit
    pairs of k and is packed element by element."""
    rng = np.random.default_rng(2)
    big = rng.normal(size=(70, 90)).astype(BF16)
    a = big[::2, 1:80:2]  # (35, 40), both strides > 1
    b = rng.normal(size=(64, 39)).astype(BF16).T[:, :]  # (39, 64) transposed, k = 39 odd
    a = a[:, :39]
    _check(gemm_amx.matmul(a, b, BF16, 2), a, b, BF16)


@needs_amx
def test_special_values_and_rounding():
    """NaN spreads to its row, an infinity gives +-inf or NaN as float32 sums do, a sum past
    bfloat16's range rounds to inf, and NaN results are the quiet NaN of their sign. (Where
    partial sums overflow with both signs, inf - inf depends on the order of the sums, so
    only order-free cases are compared.)"""
    rng = np.random.default_rng(3)
    a, b = _operands(rng, 32, 32, 32)
    a, b = a.copy(), b.copy()
    a[3, 5] = np.nan
    a[7, :] = 1.0
    b[:, 9] = np.inf
    a[9, :] = 3e38
    b[:, 10] = np.abs(b[:, 10]) + 1  # row 9 x column 10: 32 positive terms past the range
    with np.errstate(over="ignore", invalid="ignore"):
        want = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF16).astype(np.float32)
    got = gemm_amx.matmul(a, b, BF16, 2).astype(np.float32)
    assert np.all(np.isnan(got[3])) and got[7, 9] == np.inf and got[9, 10] == np.inf
    order_free = np.ones(got.shape, bool)
    order_free[9] = False  # 3e38 times mixed signs: inf - inf in some orders, not in others
    np.testing.assert_array_equal(np.isnan(got)[order_free], np.isnan(want)[order_free])
    np.testing.assert_array_equal(got[order_free & np.isinf(want)],
                                  want[order_free & np.isinf(want)])
    bits = got[np.isnan(got)].astype(BF16).view(np.uint16) & 0x7FFF
    assert bits.size and np.all(bits == 0x7FC0)


def test_rounded_bits_match_ml_dtypes():
    """The float32 -> bfloat16 rounding of C (ties to even, NaN quieted) is ml_dtypes' cast,
    over every exponent, the ties, infinities and NaNs (the helper runs on any host)."""
    from numba import njit

    @njit
    def rounded(bits):
        out = np.empty(bits.size, np.uint16)
        for i in range(bits.size):
            out[i] = gemm_amx._rounded_bits(bits[i])
        return out

    rng = np.random.default_rng(4)
    bits = np.concatenate([
        rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32),
        np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7F800001,
                  0xFFC12345, 0x00008000, 0x80018000], np.uint32)])
    with np.errstate(invalid="ignore"):  # (casting NaNs)
        want = bits.view(np.float32).astype(BF16).view(np.uint16)
    np.testing.assert_array_equal(rounded(bits), want)


@needs_amx
def test_vector_rounding_matches_ml_dtypes_on_what_the_tiles_produce():
    """Whole rows of 16 are rounded by one fptrunc (`_round16`, AVX512-BF16's vcvtneps2bf16 on
    AMX hosts): ml_dtypes' cast for every normal exponent, the ties, infinities and the
    default NaNs the tiles produce; subnormals (which the tiles flush) become signed zeros."""
    from numba import njit

    @njit
    def rounded(values):
        out = np.empty(values.size, np.uint16)
        for i in range(0, values.size, 16):
            gemm_amx._round16(values, i, out, i)
        return out

    rng = np.random.default_rng(6)
    normal = rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)
    normal = normal[((normal >> 23) & 0xFF != 0) & ((normal >> 23) & 0xFF != 0xFF)]
    bits = np.concatenate([normal[:normal.size // 16 * 16], np.array(
        [0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
         0x00000000, 0x80000000, 0x00008000, 0x80018000, 0x007FFFFF, 0x3F800000, 0xBF7FFFFF,
         0x3F7F8000, 0x4B800001], np.uint32)])
    with np.errstate(invalid="ignore"):  # (casting NaNs)
        want = bits.view(np.float32).astype(BF16).view(np.uint16)
    subnormal = (bits & 0x7F800000 == 0) & (bits & 0x7FFFFF != 0)
    want[subnormal] = (bits[subnormal] >> 16) & 0x8000
    np.testing.assert_array_equal(rounded(bits.view(np.float32)), want)


def test_without_tiles_the_product_is_float32(monkeypatch):
    """A program compiled on an AMX host and run on one without (or a product the tiles do
    not take) computes in float32 and rounds once, as narrow_floats would have."""
    monkeypatch.setattr(gemm_amx, "host_has_amx", lambda: False)
    rng = np.random.default_rng(5)
    a, b = _operands(rng, 40, 50, 30, a_transposed=True)
    wide = a.astype(np.float32) @ b.astype(np.float32)
    got = library.bfloat16_dot(a[None], b[None], BF16)[0]
    np.testing.assert_array_equal(got.view(np.uint16), wide.astype(BF16).view(np.uint16))
    np.testing.assert_allclose(library.bfloat16_dot(a[None], b[None], F32)[0], wide,
                               rtol=1e-6)


def _kept_products(f, *args):
    """The bfloat16-operand products left in `f`'s rewritten program (the CPU backend's
    rewrite, as jit runs it)."""
    from numbax._src.compiler import pipeline
    from numbax._src.compiler.api import get_backend
    from numbax._src.lax import dot as ld

    jaxpr = get_backend("cpu").rewrite(pipeline.prepare(numbax.make_jaxpr(f)(*args).jaxpr))
    return [e for e in jaxpr.eqns if e.primitive is ld.dot_general_p
            and all(v.aval.dtype == BF16 for v in e.invars)]


def test_what_the_rewrite_keeps_in_bfloat16():
    """With tiles: products whose matrices the tiles take keep bfloat16 operands, batched or
    not; small ones and those in loop bodies (compiled by Numba, which has no bfloat16) are
    computed in float32. Without tiles (or with `cpu_amx` off): none."""
    rng = np.random.default_rng(6)
    x, w = (rng.normal(size=s).astype(BF16) for s in ((64, 48), (48, 32)))
    small = (rng.normal(size=(8, 48)).astype(BF16), w)
    batched = tuple(rng.normal(size=s).astype(BF16) for s in ((4, 32, 48), (4, 48, 32)))
    small_batched = tuple(rng.normal(size=s).astype(BF16) for s in ((4, 3, 3), (4, 3, 3)))

    def in_loop(x, w):
        return numbax.lax.fori_loop(0, 3, lambda i, h: (h @ w) @ w.T, x)

    expected = 1 if gemm_amx.available() else 0
    assert len(_kept_products(lambda a, b: a @ b, x, w)) == expected
    assert len(_kept_products(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32),
                              x, w)) == expected
    assert _kept_products(lambda a, b: a @ b, *small) == []
    assert len(_kept_products(lambda a, b: a @ b, *batched)) == expected
    assert _kept_products(lambda a, b: a @ b, *small_batched) == []
    assert _kept_products(in_loop, x, w) == []
    with numbax.config.override("cpu_amx", False):
        assert _kept_products(lambda a, b: a @ b, x, w) == []


def test_jitted_bfloat16_training_step_matches_eager():
    """A bfloat16 MLP's gradient step under jit (its products on the tiles where the host has
    them: x @ W, d @ Wᵀ, xᵀ @ d) against the same step run eagerly (float32 products rounded),
    within bfloat16's rounding; and the loop-body form compiles and agrees too."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(64, 96)).astype(BF16)
    w1 = (rng.normal(size=(96, 64)) * 0.1).astype(BF16)
    w2 = (rng.normal(size=(64, 32)) * 0.1).astype(BF16)

    def loss(params, x):
        a, b = params
        h = numbax.nn.relu(x @ a)
        return jnp.mean(jnp.square((h @ b).astype(jnp.float32)))

    grads = numbax.jit(numbax.grad(loss))((w1, w2), x)
    eager = numbax.grad(loss)((w1, w2), x)
    for got, want in zip(grads, eager, strict=True):
        assert got.dtype == BF16
        want = np.asarray(want, np.float64)
        scale = np.abs(want).max()
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2 ** -6,
                                   atol=2 ** -6 * scale)

    def steps(w, x):
        return numbax.lax.fori_loop(0, 2, lambda i, h: numbax.nn.relu(h @ w), x)

    square = (rng.normal(size=(96, 96)) * 0.1).astype(BF16)
    got = numbax.jit(steps)(square, x)
    want = steps(square, x)
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                               rtol=2 ** -6, atol=2 ** -6 * float(np.abs(
                                   np.asarray(want, np.float32)).max()))


def test_config_option_is_validated():
    with pytest.raises(ValueError, match="cpu_amx"):
        numbax.config.update("cpu_amx", "sometimes")


@needs_amx
def test_subnormals_flush_to_zero_on_the_tiles():
    """tdpbf16ps reads subnormal bfloat16 operands as zero and flushes subnormal float32
    sums (docs/sharp_bits.md): the tiles' documented difference from float32 arithmetic."""
    a, b = np.zeros((16, 32), BF16), np.zeros((32, 16), BF16)
    a[0, 0], b[0, 0] = 5e-39, 1e10  # a subnormal operand; its product 5e-29 is normal
    a[1, 0], b[0, 1] = 1e-20, 1e-20  # normal operands, a subnormal product (1e-40)
    a[2, 0], b[0, 2] = 3.0, 2.0
    got = gemm_amx.matmul(a, b, F32, 1)
    assert got[0, 0] == 0 and got[1, 1] == 0 and got[2, 2] == 6
    assert float(a[0, 0]) * 1e10 > 1e-30  # (what float32 arithmetic gives instead)


@needs_amx
def test_eager_products_give_the_jitted_bits():
    """An eager bfloat16 product the tiles take runs on them as the jitted one does: the same
    bits, batched or not, either result dtype."""
    rng = np.random.default_rng(13)
    x, w = rng.normal(size=(48, 64)).astype(BF16), rng.normal(size=(64, 40)).astype(BF16)
    heads = (rng.normal(size=(3, 32, 64)).astype(BF16), rng.normal(size=(3, 40, 64)).astype(BF16))
    calls = [(lambda a, b: a @ b, (x, w)),
             (lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32), (x, w)),
             (lambda a, b: jnp.einsum("hqd,hkd->hqk", a, b), heads)]
    for f, args in calls:
        args = tuple(jnp.asarray(a) for a in args)  # (numpy's own @ of bfloat16: float32)
        eager, jitted = np.asarray(f(*args)), np.asarray(numbax.jit(f)(*args))
        assert eager.dtype == jitted.dtype
        np.testing.assert_array_equal(eager.view(np.uint8), jitted.view(np.uint8))


def test_eager_products_without_tiles_are_rounded_float32():
    """With `cpu_amx` off (or no tiles), and for a product too small for them, an eager
    bfloat16 product is numpy's float32 product rounded once."""
    rng = np.random.default_rng(14)
    x, w = rng.normal(size=(48, 64)).astype(BF16), rng.normal(size=(64, 40)).astype(BF16)
    small = rng.normal(size=(8, 64)).astype(BF16)
    with numbax.config.override("cpu_amx", False):
        for a, b in ((x, w), (small, w)):
            want = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF16)
            got = np.asarray(jnp.asarray(a) @ jnp.asarray(b))
            np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
