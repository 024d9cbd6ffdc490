"""XLA's random number primitives: rng_bit_generator (counter-based bits from an explicit
key/state) and rng_uniform (stateful uniform samples)."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import pieces
from numbax._src.lax.params import RandomAlgorithm

_U32 = np.uint32
_BIT_DTYPES = {np.dtype(d) for d in (np.uint8, np.uint16, np.uint32, np.uint64)}

# ----------------------------------------------------------------------------- the generators


def threefry2x32_words(k1: Any, k2: Any, x0: Any, x1: Any) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011), as jax.random uses it: the counter
    pairs (x0, x1) hashed under the keys (k1, k2), uint32 arrays or scalars broadcast together."""
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    k1, k2, x0, x1 = np.broadcast_arrays(*(np.asarray(v, _U32) for v in (k1, k2, x0, x1)))
    with np.errstate(over="ignore"):
        ks = (k1, k2, k1 ^ k2 ^ _U32(0x1BD11BDA))
        x0, x1 = x0 + ks[0], x1 + ks[1]
        for block in range(5):
            for r in rotations[block % 2]:
                x0 = x0 + x1
                x1 = (x1 << _U32(r)) | (x1 >> _U32(32 - r))
                x1 = x1 ^ x0
            x0 = x0 + ks[(block + 1) % 3]
            x1 = x1 + ks[(block + 2) % 3] + _U32(block + 1)
    return x0, x1


def _philox4x32(key: np.ndarray, c: list[np.ndarray]) -> list[np.ndarray]:
    """Philox-4x32 with 10 rounds (Salmon et al. 2011)."""
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    k0, k1 = int(key[0]), int(key[1])  # the key schedule in Python ints, wrapped by hand
    c0, c1, c2, c3 = c
    for _ in range(10):
        p0, p1 = m0 * c0.astype(np.uint64), m1 * c2.astype(np.uint64)
        hi0, lo0 = (p0 >> np.uint64(32)).astype(_U32), p0.astype(_U32)
        hi1, lo1 = (p1 >> np.uint64(32)).astype(_U32), p1.astype(_U32)
        c0, c1, c2, c3 = hi1 ^ c1 ^ _U32(k0), lo1, hi0 ^ c3 ^ _U32(k1), lo0
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return [c0, c1, c2, c3]


def _words(key: np.ndarray, n: int, algorithm: int) -> tuple[np.ndarray, np.ndarray]:
    """n uint32 words from the key/state (k0, k1, counter_hi, counter_lo) and the state
    that follows them (the counter advanced past the blocks used)."""
    counter = (np.uint64(key[2]) << np.uint64(32)) | np.uint64(key[3])
    per_block = 2 if algorithm == RandomAlgorithm.RNG_THREE_FRY else 4
    blocks = -(-n // per_block)
    ctr = counter + np.arange(blocks, dtype=np.uint64)
    hi, lo = (ctr >> np.uint64(32)).astype(_U32), ctr.astype(_U32)
    with np.errstate(over="ignore"):
        if per_block == 2:
            outs = threefry2x32_words(key[0], key[1], hi, lo)
        else:
            outs = _philox4x32(key, [lo, hi, np.full_like(lo, key[0]), np.full_like(lo, key[1])])
    words = np.stack(outs, axis=1).reshape(-1)[:n]
    end = counter + np.uint64(blocks)
    new_key = np.array([key[0], key[1], end >> np.uint64(32), end & np.uint64(0xFFFFFFFF)],
                       _U32)
    return new_key, words


# ----------------------------------------------------------------------------- rng_bit_generator

rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)


def _rbg_abstract_eval(key: ShapedArray, *, algorithm, dtype, out_sharding, shape) -> list:
    if key.dtype != np.uint32 or key.shape != (4,):
        raise NumbaxTypeError(
            f"lax.rng_bit_generator: key has {key.str_short()}, expected u32[4] (the generator "
            "state).")
    return [key, ShapedArray(shape, dtype)]


def _rbg_impl(key, *, algorithm, dtype, out_sharding, shape):
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    n_words = -(-count * dtype.itemsize // 4)
    new_key, words = _words(np.asarray(key, _U32), n_words, algorithm)
    bits = words.view(np.uint8)[:count * dtype.itemsize].view(dtype).reshape(shape)
    return [new_key, bits]


def _rbg_batch(axis_size, vals, dims, **params):
    (key,), (d,) = vals, dims
    per_example = [rng_bit_generator_p.bind(k, **params)
                   for k in pieces.unstack(key, axis=d)]
    keys, bits = zip(*per_example, strict=True)
    return [pieces.stack(list(keys)), pieces.stack(list(bits))], [0, 0]


core.abstract_eval_rules[rng_bit_generator_p] = _rbg_abstract_eval
core.impl_rules[rng_bit_generator_p] = _rbg_impl
ad.non_differentiable.add(rng_bit_generator_p)
batching.batch_rules[rng_bit_generator_p] = _rbg_batch


def rng_bit_generator(key: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
    """(new_key, bits): random unsigned integers of `shape` and `dtype` from the generator
    state `key` (u32[4]: two key words and a 64-bit counter), and the state to use next.

    Unlike XLA, whose bits are its own (RNG_DEFAULT is backend-specific there), numbax's are
    Philox-4x32-10 (RNG_DEFAULT, RNG_PHILOX) or Threefry-2x32 (RNG_THREE_FRY) of the key and
    counter: deterministic, but not XLA's values.

    >>> new_key, bits = rng_bit_generator(np.array([1, 2, 3, 4], np.uint32), (2,))
    >>> new_key
    Array([1, 2, 3, 5], dtype=uint32)
    """
    dtype = np.dtype(dtype)
    if dtype not in _BIT_DTYPES:
        raise NumbaxTypeError(
            f"lax.rng_bit_generator: dtype has {dtype}, expected uint8, uint16, uint32 or "
            "uint64.")
    try:
        algorithm = RandomAlgorithm(algorithm)
    except ValueError as err:
        raise NumbaxValueError(
            f"lax.rng_bit_generator: algorithm has {algorithm!r}, expected a "
            "lax.RandomAlgorithm.") from err
    shape = tuple(operator.index(d) for d in shape)
    new_key, bits = rng_bit_generator_p.bind(key, algorithm=int(algorithm), dtype=dtype,
                                             out_sharding=None, shape=shape)
    return new_key, bits


# ----------------------------------------------------------------------------- rng_uniform

rng_uniform_p = Primitive("rng_uniform")


def _rng_uniform_abstract_eval(a: ShapedArray, b: ShapedArray, *, shape) -> list:
    if a.shape != () or b.shape != () or a.dtype != b.dtype:
        raise NumbaxTypeError(
            f"lax.rng_uniform: a and b are {a.str_short()} and {b.str_short()}, expected "
            "scalars of one dtype.")
    if kind_of(a.dtype) not in "iuf":
        raise NumbaxTypeError(
            f"lax.rng_uniform: a has dtype {a.dtype}, expected an integer or float dtype.")
    return [ShapedArray(shape, a.dtype)]


def _rng_uniform_impl(a, b, *, shape):
    rng = np.random.default_rng()  # stateful by design: fresh entropy for every call
    if kind_of(a.dtype) == "f":
        return [rng.uniform(a, b, size=shape).astype(a.dtype)]
    return [rng.integers(a, b, size=shape, endpoint=False).astype(a.dtype)]


def _rng_uniform_batch(axis_size, vals, dims, *, shape):
    a, b = (pieces.unstack(v, axis=d) if d is not None else [v] * axis_size
            for v, d in zip(vals, dims, strict=True))
    samples = [rng_uniform_p.bind(x, y, shape=shape) for x, y in zip(a, b, strict=True)]
    return [pieces.stack(samples)], [0]


core.abstract_eval_rules[rng_uniform_p] = _rng_uniform_abstract_eval
core.impl_rules[rng_uniform_p] = _rng_uniform_impl
ad.non_differentiable.add(rng_uniform_p)
batching.batch_rules[rng_uniform_p] = _rng_uniform_batch


def rng_uniform(a: Any, b: Any, shape: Sequence[int]) -> Any:
    """Samples uniform in [a, b) of `shape` from a stateful generator (each call differs);
    prefer numbax.random for reproducible streams.

    >>> rng_uniform(0.0, 1.0, (3,)).shape
    (3,)
    """
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        dtype = dtypes.python_scalar_dtype(a if isinstance(a, float) else b)
        a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    return rng_uniform_p.bind(a, b, shape=tuple(operator.index(d) for d in shape))
