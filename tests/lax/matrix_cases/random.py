"""Matrix rows for the random primitives: threefry2x32 (prng.py) and the compiler's
threefry_word it expands into (compiler/threefry.py), integer-valued, so no derivatives; and
random_gamma_p (numbax/_src/random_gamma.py): jit vs eager and vmap vs a loop. The gamma
sampler's jvp is the implicit reparameterisation gradient, not the derivative of the sampling
path, so finite differences of draws are no truth for it: tests/test_random_samplers.py checks
it against scipy's inverse incomplete gamma instead (grad=() here)."""
from __future__ import annotations

import numpy as np

from numbax import random
from numbax._src.compiler.threefry import threefry_word_p
from numbax._src.prng import threefry2x32_p
from tests.lax.matrix_cases import Case


def _draw(log_space: bool):
    return lambda key, a: random.random_gamma_p.bind(key, a, log_space=log_space)


def _hash(*args):
    return threefry2x32_p.bind(*args)


def _word(*args):
    return threefry_word_p.bind(*args)


def cases() -> dict[str, list[Case]]:
    rng = np.random.default_rng(41)
    words = rng.integers(0, 2 ** 32, (4, 2, 3), dtype=np.uint32)
    k1, k2 = np.uint32(0x13198A2E), np.uint32(0x03707344)
    hashes = {"threefry2x32": [
        Case(_hash, (k1, k2, words[0], words[1])),  # scalar keys, as the samplers call it
        Case(_hash, tuple(words)),  # a key per counter pair (vmapped keys)
        Case(_hash, (k1, k2, np.uint32(7), np.uint32(0xFFFFFFFF))),
    ], "threefry_word": [
        Case(_word, (k1, k2, words[0], words[1])),
        Case(_word, tuple(words)),
    ]}
    key = np.array([0, 42], np.uint32)
    keys = np.array([[0, 1], [2, 3], [4, 5]], np.uint32)
    a = np.array([0.4, 1.0, 3.5])
    return {**hashes, "random_gamma": [
        Case(_draw(False), (key, a)),
        Case(_draw(True), (key, a.astype(np.float32))),
        Case(_draw(False), (keys, np.array([[0.5, 2.0], [1.0, 1.5], [7.0, 0.1]]))),
    ]}
