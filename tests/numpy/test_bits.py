"""jnp's bit-level functions (frexp, ldexp, spacing, bitwise_count, packbits, unpackbits) and
fabs/modf against numpy, including subnormals, zeros, infinities and NaN."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError

SPECIAL = np.array([0.0, -0.0, 1.5, -3.0, 1e-310, -5e-324, np.inf, -np.inf, np.nan, 1e308,
                    2.2250738585072014e-308, 0.1, -7.25e-5])


def _same(got, want):
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_frexp_and_ldexp_match_numpy(dtype):
    with np.errstate(all="ignore"):
        x = SPECIAL.astype(dtype)
        m, e = jnp.frexp(x)
        want_m, want_e = np.frexp(x)
        _same(m, want_m)
        _same(e, want_e)
        info = np.finfo(dtype)
        span = int(info.maxexp - info.minexp + info.nmant)
        for n in (0, 1, -1, 7, -span, -span - 3, span, 2 * span + 5, -2 * span - 5):
            _same(jnp.ldexp(x, n), np.ldexp(x, n))
        ns = np.array([3, -3, 0, span, -span, 1, 2, 4, 5, 6, 7, -8, 9], dtype=np.int32)
        _same(jnp.ldexp(x, ns), np.ldexp(x, ns))
    _same(jnp.ldexp(np.arange(3), 2), np.ldexp(np.arange(3), 2))
    _same(jnp.frexp(np.arange(4))[0], np.frexp(np.arange(4.0))[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_spacing_matches_numpy(dtype):
    with np.errstate(all="ignore"):
        x = SPECIAL.astype(dtype)
        _same(jnp.spacing(x), np.spacing(x))


def test_fabs_modf_bitwise_count_match_numpy():
    x = np.array([-1.5, np.inf, -np.inf, np.nan, -0.0, 2.75, 3.0])
    for got, want in zip(jnp.modf(x), np.modf(x)):
        _same(got, want)
    _same(jnp.fabs(np.arange(-2, 2)), np.fabs(np.arange(-2, 2)))
    _same(jnp.fabs(x), np.fabs(x))
    for dt in (np.int8, np.int16, np.int64, np.uint8, np.uint32):
        v = np.array([0, 1, 7, np.iinfo(dt).max, np.iinfo(dt).min], dtype=dt)
        _same(jnp.bitwise_count(v), np.bitwise_count(v))
    _same(jnp.bitwise_count(np.array([True, False])), np.bitwise_count(np.array([True, False])))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_packbits_unpackbits_match_numpy(axis, bitorder):
    a = np.array([[1, 0, 1, 1, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0, 5]])
    packed = np.packbits(a, axis, bitorder=bitorder)
    _same(jnp.packbits(a, axis, bitorder), packed)
    _same(jnp.packbits(a.astype(bool), axis, bitorder), packed)
    for count in (None, 3, -2, 20, 0):
        _same(jnp.unpackbits(packed, axis, count, bitorder),
              np.unpackbits(packed, axis, count, bitorder=bitorder))


def test_bit_functions_under_transforms():
    x = np.array([0.3, -2.0, 5e-320, 7.0])
    f = numbax.jit(lambda x: jnp.frexp(jnp.ldexp(x, 3)))
    for got, want in zip(f(x), np.frexp(np.ldexp(x, 3))):
        _same(got, want)
    g = numbax.grad(lambda x: (jnp.ldexp(x, 3) + jnp.modf(x)[0] + jnp.fabs(x)).sum())
    np.testing.assert_allclose(g(x), 8.0 + 1.0 + np.sign(x))
    rows = np.array([[1, 0, 1], [0, 1, 1]])
    _same(numbax.vmap(jnp.packbits)(rows), np.stack([np.packbits(r) for r in rows]))


def test_bit_functions_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="x has dtype complex128"):
        jnp.frexp(np.array([1j]))
    with pytest.raises(NumbaxTypeError, match="x2 has dtype float64"):
        jnp.ldexp(1.0, 2.0)
    with pytest.raises(NumbaxTypeError, match="real"):
        jnp.spacing(np.array([1j]))
    with pytest.raises(NumbaxTypeError, match="integer or boolean"):
        jnp.bitwise_count(np.array([1.5]))
    with pytest.raises(NumbaxTypeError, match="integer or boolean"):
        jnp.packbits(np.array([1.0]))
    with pytest.raises(NumbaxTypeError, match="expected uint8"):
        jnp.unpackbits(np.array([1, 2]))
    with pytest.raises(NumbaxValueError, match="bitorder"):
        jnp.packbits(np.array([1]), bitorder="middle")
    with pytest.raises(NumbaxTypeError, match="real dtype"):
        jnp.fabs(np.array([1j]))
    with pytest.raises(NumbaxTypeError, match="real dtype"):
        jnp.modf(np.array([1j]))
