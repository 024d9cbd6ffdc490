"""numbax.numpy.fft vs numpy.fft: every transform with n/s, axes and each norm, the frequency
helpers and shifts, gradients, jit, and bad input."""
import doctest

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.numpy import fft as fft_module
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(5)
X = RNG.normal(size=(3, 4, 5))
Z = X + 1j * RNG.normal(size=X.shape)
NORMS = [None, "backward", "ortho", "forward"]


def close(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_1d_transforms(name, norm):
    ours, theirs = getattr(jnp.fft, name), getattr(np.fft, name)
    data = X if name in ("rfft", "ihfft") else Z
    for n, axis in ((None, -1), (3, 1), (7, 0), (8, -1)):
        close(ours(data, n=n, axis=axis, norm=norm), theirs(data, n=n, axis=axis, norm=norm))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                                  "irfftn"])
def test_nd_transforms(name, norm):
    ours, theirs = getattr(jnp.fft, name), getattr(np.fft, name)
    data = X if name.startswith("rfft") else Z
    cases = [dict(), dict(axes=(0, 2)), dict(s=(3, 6), axes=(2, 0)), dict(s=(2, 6))]
    if name.endswith("n"):
        cases += [dict(s=(2, 3, 4)), dict(axes=(1,))]
    for kw in cases:
        np_kw = dict(kw)
        if "s" in kw and "axes" not in kw:  # numpy 2 wants axes spelled out with s
            np_kw["axes"] = tuple(range(-len(kw["s"]), 0))
        close(ours(data, norm=norm, **kw), theirs(data, norm=norm, **np_kw))


def test_more_than_three_axes():
    x = RNG.normal(size=(2, 3, 2, 4, 3))
    close(jnp.fft.fftn(x), np.fft.fftn(x))
    close(jnp.fft.rfftn(x), np.fft.rfftn(x))
    half = np.fft.rfftn(x)
    close(jnp.fft.irfftn(half, s=x.shape), np.fft.irfftn(half, s=x.shape, axes=range(5)))
    close(jnp.fft.ifftn(half, axes=(0, 1, 2, 4)), np.fft.ifftn(half, axes=(0, 1, 2, 4)))


def test_dtypes():
    assert jnp.fft.fft(np.ones(4, np.float32)).dtype == np.complex64
    assert jnp.fft.rfft(np.arange(4)).dtype == np.complex128
    assert jnp.fft.irfft(np.ones(3, np.complex64)).dtype == np.float32
    assert jnp.fft.fftfreq(4, dtype=np.float32).dtype == np.float32


def test_frequencies_and_shifts():
    for n in (1, 4, 7):
        for d in (1.0, 0.25):
            close(jnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
            close(jnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    x = np.arange(30).reshape(5, 6)
    for axes in (None, 0, (1,), (-1, 0)):
        np.testing.assert_array_equal(np.asarray(jnp.fft.fftshift(x, axes)),
                                      np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(np.asarray(jnp.fft.ifftshift(x, axes)),
                                      np.fft.ifftshift(x, axes))
    # a traced spacing
    got = numbax.jit(lambda d: jnp.fft.fftfreq(6, d))(0.5)
    close(got, np.fft.fftfreq(6, 0.5))


def test_gradients():
    check_grads(lambda x: jnp.abs(jnp.fft.rfft2(x, norm="ortho")), (X,), order=2)
    check_grads(lambda x: jnp.fft.irfft(jnp.fft.rfft(x, n=8), n=7), (X,), order=2)
    check_grads(lambda x: jnp.real(jnp.fft.hfft(x + 0.5j * x, n=6)), (X,), order=1)
    g = numbax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 2))(X[0, 0])
    close(g, 2 * len(X[0, 0]) * X[0, 0])  # Parseval


def test_jit_and_vmap():
    f = lambda x: jnp.fft.fftn(x, axes=(0, 2), norm="ortho")  # noqa: E731
    close(numbax.jit(f)(X), np.fft.fftn(X, axes=(0, 2), norm="ortho"))
    close(numbax.vmap(jnp.fft.rfft)(X), np.fft.rfft(X))


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match="norm"):
        jnp.fft.fft(Z, norm="unitary")
    with pytest.raises(NumbaxValueError, match="norm"):
        jnp.fft.hfft(Z, norm="unitary")
    with pytest.raises(NumbaxValueError, match="repeat"):
        jnp.fft.fftn(Z, axes=(0, 0))
    with pytest.raises(NumbaxValueError, match="out of bounds"):
        jnp.fft.fft(Z, axis=3)
    with pytest.raises(NumbaxValueError, match="equal lengths"):
        jnp.fft.fftn(Z, s=(2, 2), axes=(0,))
    with pytest.raises(NumbaxValueError, match="positive"):
        jnp.fft.fft(Z, n=0)
    with pytest.raises(NumbaxTypeError, match="real input"):
        jnp.fft.rfft(Z)
    with pytest.raises(NumbaxValueError, match="pass n"):
        jnp.fft.irfft(np.ones(1, complex))
    with pytest.raises(NumbaxValueError, match="positive"):
        jnp.fft.fftfreq(0)
    with pytest.raises(NumbaxTypeError, match="floating"):
        jnp.fft.rfftfreq(4, dtype=np.int32)


def test_doctests():
    result = doctest.testmod(fft_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
