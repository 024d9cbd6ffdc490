"""lax.rng_bit_generator and lax.rng_uniform: published Philox/Threefry test vectors, the
state they return, uniformity of the bits, transformations and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.errors import NumbaxTypeError

U32 = np.uint32


def test_bits_are_the_published_philox_and_threefry_vectors():
    """Random123's known-answer tests: Philox-4x32-10 of key 0, counter 0, and
    Threefry-2x32-20 of the pi-digit key and counter (as jax.random's tests use)."""
    philox = lax.RandomAlgorithm.RNG_PHILOX
    _, bits = lax.rng_bit_generator(np.zeros(4, U32), (4,), algorithm=philox)
    np.testing.assert_array_equal(bits, [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8])
    key = np.array([0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3], U32)
    _, bits = lax.rng_bit_generator(key, (2,), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
    np.testing.assert_array_equal(bits, [0xC4923A9C, 0x483DF7A0])


def test_state_advances_and_streams_continue():
    key = np.array([7, 9, 0, 0xFFFFFFFF], U32)
    k1, first = lax.rng_bit_generator(key, (8,))
    np.testing.assert_array_equal(k1, [7, 9, 1, 1])  # two Philox blocks, carried into hi
    k2, second = lax.rng_bit_generator(k1, (8,))
    _, both = lax.rng_bit_generator(key, (16,))
    np.testing.assert_array_equal(np.concatenate([first, second]), both)
    _, again = lax.rng_bit_generator(key, (8,))
    np.testing.assert_array_equal(again, first)


def test_bits_look_uniform_in_every_dtype():
    key = np.array([1, 2, 3, 4], U32)
    _, small = lax.rng_bit_generator(key, (64000,), dtype=np.uint8)
    counts = np.bincount(np.asarray(small), minlength=256)
    chi2 = ((counts - 250.0) ** 2 / 250.0).sum()
    assert chi2 < 350  # 255 degrees of freedom: p ~ 1e-4
    for dtype in (np.uint16, np.uint32, np.uint64):
        _, bits = lax.rng_bit_generator(key, (5000,), dtype=dtype)
        assert bits.dtype == dtype and bits.shape == (5000,)
        frac = np.asarray(bits, np.float64) / float(np.iinfo(dtype).max)
        assert abs(frac.mean() - 0.5) < 0.02


def test_transformations_and_rng_uniform():
    keys = np.arange(12, dtype=U32).reshape(3, 4)
    got = numbax.vmap(lambda k: lax.rng_bit_generator(k, (2, 3))[1])(keys)
    for i in range(3):
        np.testing.assert_array_equal(got[i], lax.rng_bit_generator(keys[i], (2, 3))[1])
    jitted = numbax.jit(lambda k: lax.rng_bit_generator(k, (5,), dtype=np.uint16))(keys[0])
    np.testing.assert_array_equal(jitted[1], lax.rng_bit_generator(keys[0], (5,),
                                                                   dtype=np.uint16)[1])
    u = lax.rng_uniform(2.0, 3.0, (1000,))
    assert u.dtype == np.float64 and 2.0 <= float(u.min()) and float(u.max()) < 3.0
    assert abs(float(u.mean()) - 2.5) < 0.05
    assert not np.array_equal(u, lax.rng_uniform(2.0, 3.0, (1000,)))  # stateful
    ints = lax.rng_uniform(np.int32(-3), np.int32(4), (500,))
    assert ints.dtype == np.int32 and set(np.unique(ints).tolist()) == set(range(-3, 4))


def test_bad_input():
    with pytest.raises(NumbaxTypeError, match="u32\\[4\\]"):
        lax.rng_bit_generator(np.zeros(2, U32), (3,))
    with pytest.raises(NumbaxTypeError, match="dtype"):
        lax.rng_bit_generator(np.zeros(4, U32), (3,), dtype=np.float32)
    with pytest.raises(ValueError, match="algorithm"):
        lax.rng_bit_generator(np.zeros(4, U32), (3,), algorithm=7)
    with pytest.raises(NumbaxTypeError, match="scalars of one dtype"):
        lax.rng_uniform(np.zeros(2), 1.0, (3,))
