"""numbax.scipy.fft's DCTs vs scipy.fft: types 2 and 3, every norm, n/s/axes, complex and
integer input, round trips, gradients, jit and bad input."""
import doctest

import numpy as np
import pytest
import scipy.fft as sf

import numbax
import numbax.scipy.fft as jf
from numbax._src.scipy import fft as fft_module
from numbax.errors import NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(21)
NORMS = [None, "backward", "ortho", "forward"]


def close(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("type_", [2, 3])
def test_dct_idct_match_scipy(type_, norm):
    for n in (1, 2, 5, 8):
        x = RNG.normal(size=(3, n))
        for name in ("dct", "idct"):
            close(getattr(jf, name)(x, type_, norm=norm), getattr(sf, name)(x, type_, norm=norm))
    x = RNG.normal(size=(4, 6))
    for kw in (dict(n=4), dict(n=9, axis=0), dict(axis=0)):
        close(jf.dct(x, type_, norm=norm, **kw), sf.dct(x, type_, norm=norm, **kw))
        close(jf.idct(x, type_, norm=norm, **kw), sf.idct(x, type_, norm=norm, **kw))


@pytest.mark.parametrize("norm", NORMS)
def test_dctn_idctn_match_scipy(norm):
    x = RNG.normal(size=(3, 4, 5))
    for kw in (dict(), dict(axes=(0, 2)), dict(s=(2, 6)), dict(s=(4, 3), axes=(2, 0)),
               dict(type=3, axes=1)):
        close(jf.dctn(x, norm=norm, **kw), sf.dctn(x, norm=norm, **kw))
        close(jf.idctn(x, norm=norm, **kw), sf.idctn(x, norm=norm, **kw))


def test_complex_integer_and_round_trip():
    z = RNG.normal(size=6) + 1j * RNG.normal(size=6)
    close(jf.dct(z), sf.dct(z))
    close(jf.dct(np.arange(5)), sf.dct(np.arange(5.)))
    x = RNG.normal(size=(4, 7))
    for norm in NORMS:
        close(jf.idctn(jf.dctn(x, norm=norm), norm=norm), x)


def test_gradients_and_jit():
    x = RNG.normal(size=(3, 6))
    check_grads(lambda v: jf.dct(v, norm="ortho"), (x,), order=2)
    check_grads(lambda v: jf.idctn(v, type=3), (x,), order=1)
    # the orthonormal DCT preserves the squared norm, so its gradient is 2x
    g = numbax.grad(lambda v: (jf.dct(v, norm="ortho") ** 2).sum())(x)
    close(g, 2 * x)
    close(numbax.jit(lambda v: jf.dctn(v, axes=(0, 1)))(x), sf.dctn(x, axes=(0, 1)))


def test_bad_inputs():
    x = np.ones((3, 4))
    with pytest.raises(NotImplementedError, match="type 1"):
        jf.dct(x, type=1)
    with pytest.raises(NumbaxValueError, match="norm"):
        jf.idct(x, norm="unitary")
    with pytest.raises(NumbaxValueError, match="axis"):
        jf.dct(x, axis=2)
    with pytest.raises(NumbaxValueError, match="n has"):
        jf.dct(x, n=0)
    with pytest.raises(NumbaxValueError, match="repeat"):
        jf.dctn(x, axes=(0, 0))
    with pytest.raises(NumbaxValueError, match="at most"):
        jf.dctn(x, s=(1, 2, 3))


def test_doctests():
    result = doctest.testmod(fft_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
