"""lax.fft: the four transform types vs numpy.fft over one to three axes, dtypes, gradients vs
finite differences (the RFFT/IRFFT transposes), vmap, jit and bad input. The matrix rows live
in matrix_cases/fft.py."""
import doctest

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax._src.lax import fft as fft_module
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(3)
X = RNG.normal(size=(3, 4, 6))
Z = X + 1j * RNG.normal(size=X.shape)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_types_match_numpy(k):
    axes, lengths = tuple(range(3 - k, 3)), X.shape[-k:]
    np.testing.assert_allclose(np.asarray(lax.fft(Z, lax.FftType.FFT, lengths)),
                               np.fft.fftn(Z, axes=axes), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(lax.fft(Z, "ifft", lengths)),
                               np.fft.ifftn(Z, axes=axes), rtol=1e-12, atol=1e-12)
    half = np.fft.rfftn(X, axes=axes)
    np.testing.assert_allclose(np.asarray(lax.fft(X, "RFFT", lengths)), half, rtol=1e-12,
                               atol=1e-12)
    for n in (6, 7):  # the output length decides how the half spectrum is read
        out_lengths = (*lengths[:-1], n)
        np.testing.assert_allclose(np.asarray(lax.fft(half, "irfft", out_lengths)),
                                   np.fft.irfftn(half, s=out_lengths, axes=axes), rtol=1e-12,
                                   atol=1e-12)


def test_dtypes():
    assert lax.fft(np.ones(4, np.float32), "rfft", (4,)).dtype == np.complex64
    assert lax.fft(np.ones(4, np.float32), "fft", (4,)).dtype == np.complex64
    assert lax.fft(np.ones(4, np.int32), "fft", (4,)).dtype == np.complex128
    assert lax.fft(np.ones(3, np.complex64), "irfft", (4,)).dtype == np.float32
    x32 = X.astype(np.float32)
    np.testing.assert_allclose(np.asarray(lax.fft(x32, "rfft", (6,))), np.fft.rfft(X),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind,lengths", [("rfft", (4, 6)), ("irfft", (4, 7)),
                                          ("irfft", (8,)), ("fft", (3, 4, 6))])
def test_gradients_match_finite_differences(kind, lengths):
    if kind == "rfft":
        check_grads(lambda x: lax.fft(x, kind, lengths), (X,), order=2)
        return
    shape = (*X.shape[:3 - len(lengths)], *lengths[:-1],
             lengths[-1] // 2 + 1 if kind == "irfft" else lengths[-1])
    re, im = RNG.normal(size=shape), RNG.normal(size=shape)
    check_grads(lambda a, b: lax.fft(lax.complex(a, b), kind, lengths), (re, im), order=2)


def test_vmap_and_jit():
    xs = RNG.normal(size=(2, 5, 8))
    f = lambda x: lax.fft(x, "rfft", (8,))  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.vmap(f, in_axes=1)(xs)),
                               np.fft.rfft(np.moveaxis(xs, 1, 0)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(xs)), np.fft.rfft(xs), rtol=1e-12,
                               atol=1e-12)
    jaxpr = numbax.make_jaxpr(f)(xs)
    assert "fft[fft_lengths=(8,) fft_type=2]" in str(jaxpr)  # params sorted, as JAX


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match="fft_type"):
        lax.fft(Z, "dct", (6,))
    with pytest.raises(NumbaxTypeError, match="real dtype"):
        lax.fft(Z, "rfft", (6,))
    with pytest.raises(NumbaxValueError, match="fft_lengths"):
        lax.fft(Z, "fft", (5,))
    with pytest.raises(NumbaxValueError, match="1 to 3"):
        lax.fft(np.ones((2, 2, 2, 2), complex), "fft", (2, 2, 2, 2))
    with pytest.raises(NumbaxValueError, match=r"fft_lengths\[:-1\]"):
        lax.fft(Z, "irfft", (5, 10))
    with pytest.raises(NumbaxTypeError, match="fft_lengths"):
        lax.fft(Z, "fft", 6)


def test_doctests():
    result = doctest.testmod(fft_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
