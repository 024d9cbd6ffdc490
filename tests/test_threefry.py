"""threefry2x32, the hash under every sampler: one primitive (prng.py) whose compiled form is one
call of a scalar helper per counter pair (compiler/threefry.py), checked against the known
answers of Random123 (the reference implementation's tests, which JAX's own tests use) and a
Python-int implementation of the cipher."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax, random
from numbax._src.compiler.cpu.runtime import scalars
from numbax._src.compiler.threefry import threefry_word_p
from numbax._src.prng import threefry2x32, threefry2x32_p

MASK = 0xFFFFFFFF
# (key, counters) -> hash, from Random123's test_threefry.cpp (2x32, 20 rounds)
KNOWN = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
         ((MASK, MASK), (MASK, MASK), (0x1CB996FC, 0xBB002BE7)),
         ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]


def _python_threefry(k1: int, k2: int, x0: int, x1: int) -> tuple[int, int]:
    """The cipher in Python ints, written from Salmon et al. (2011), section 4."""
    rotations = (13, 15, 26, 6, 17, 29, 16, 24)
    keys = (k1, k2, k1 ^ k2 ^ 0x1BD11BDA)
    x0, x1 = (x0 + k1) & MASK, (x1 + k2) & MASK
    for r in range(20):
        rot = rotations[r % 8]
        x0 = (x0 + x1) & MASK
        x1 = (((x1 << rot) | (x1 >> (32 - rot))) & MASK) ^ x0
        if r % 4 == 3:
            s = r // 4 + 1
            x0 = (x0 + keys[s % 3]) & MASK
            x1 = (x1 + keys[(s + 1) % 3] + s) & MASK
    return x0, x1


def _u32(*values) -> list[np.ndarray]:
    return [np.asarray(v, np.uint32) for v in values]


@pytest.mark.parametrize("key,counters,want", KNOWN)
def test_random123_known_answers_eager_compiled_and_in_the_helper(key, counters, want):
    args = _u32(*key, *counters)
    assert _python_threefry(*key, *counters) == want
    for hash_fn in (threefry2x32, numbax.jit(threefry2x32)):
        assert tuple(int(h) for h in hash_fn(*args)) == want
    word = int(scalars.threefry_word(*(np.uint32(v) for v in (*key, *counters))))
    assert (word >> 32, word & MASK) == want
    assert int(np.asarray(numbax.jit(threefry_word_p.bind)(*args))) == word


def test_jit_and_vmap_match_python_ints_for_keys_of_every_shape():
    rng = np.random.default_rng(3)
    k1, k2, x0, x1 = rng.integers(0, 2 ** 32, (4, 6, 5), dtype=np.uint32)
    want = np.array([[_python_threefry(*(int(a[i, j]) for a in (k1, k2, x0, x1)))
                      for j in range(5)] for i in range(6)], np.uint32)  # (6, 5, 2)
    for hash_fn in (threefry2x32, numbax.jit(threefry2x32), numbax.vmap(threefry2x32),
                    numbax.jit(numbax.vmap(threefry2x32, in_axes=1, out_axes=1))):
        got = np.stack([np.asarray(h) for h in hash_fn(k1, k2, x0, x1)], -1)
        np.testing.assert_array_equal(got, want)
    # one key broadcast over the counters, as the samplers hash
    a, b = np.uint32(k1[0, 0]), np.uint32(k2[0, 0])
    want = np.array([[_python_threefry(int(a), int(b), int(x0[i, j]), int(x1[i, j]))
                      for j in range(5)] for i in range(6)], np.uint32)
    for hash_fn in (threefry2x32, numbax.jit(threefry2x32)):
        got = np.stack([np.asarray(h) for h in hash_fn(a, b, x0, x1)], -1)
        np.testing.assert_array_equal(got, want)
    words = scalars.threefry_words(a, b, x0, x1)  # compiled control flow's array form
    np.testing.assert_array_equal((words >> np.uint64(32)).astype(np.uint32), want[..., 0])
    np.testing.assert_array_equal(words.astype(np.uint32), want[..., 1])


def test_operands_must_be_uint32_of_one_shape():
    x = np.zeros(3, np.uint32)
    with pytest.raises(TypeError, match=r"threefry2x32: operands have dtypes .*int32"):
        threefry2x32_p.bind(np.int32(0), np.uint32(0), x, x)
    with pytest.raises(TypeError, match=r"threefry2x32: operands have shapes .*expected one"):
        threefry2x32_p.bind(np.uint32(0), np.uint32(0), x, np.zeros(4, np.uint32))


def test_a_draw_is_one_helper_call_in_a_loop_body():
    """A scan body drawing with a key split per step: each hash one line of the kernel (the
    rounds written out were ~110 lines each), and the bits JAX's, as eagerly."""
    def f(key, x0):
        def step(x, k):
            k1, k2 = random.split(k)
            x = x * random.uniform(k1, x.shape, x.dtype) + random.normal(k2, x.shape, x.dtype)
            return x, x[0]
        return lax.scan(step, x0, random.split(key, 20))

    key, x0 = random.PRNGKey(8), np.ones(64, np.float32)
    text = numbax.jit(f).lower(key, x0).as_text()
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert sum("sc.threefry_word(" in line for line in code) >= 3
    assert not any(" << " in line for line in code)  # no rotation left in the kernels
    got, want = numbax.jit(f)(key, x0), f(key, x0)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)


def test_gradients_pass_around_the_hash():
    """The hash has no derivative (integer values); a reparameterised draw's gradient is the
    draw itself."""
    key = random.PRNGKey(2)

    def loss(mu, sigma):
        return jnp.mean(mu + sigma * random.normal(key, (1000,)))

    draws = np.asarray(random.normal(key, (1000,)))
    for grad in (numbax.grad(loss, (0, 1)), numbax.jit(numbax.grad(loss, (0, 1)))):
        d_mu, d_sigma = grad(0.5, 2.0)
        np.testing.assert_allclose(float(d_mu), 1.0, rtol=1e-12)
        np.testing.assert_allclose(float(d_sigma), draws.mean(), rtol=1e-6)
