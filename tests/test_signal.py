"""numbax.scipy.signal vs scipy.signal: convolutions and correlations in every mode and boundary,
fftconvolve with axes, detrend, stft/istft/csd/welch options; gradients, jit, bad input."""
import doctest
import warnings

import numpy as np
import pytest
import scipy.signal as ss

import numbax
import numbax.numpy as jnp
import numbax.scipy.signal as js
from numbax._src.scipy import signal as signal_module
from numbax._src.scipy import spectral as spectral_module
from numbax.errors import NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(12)
MODES = ["full", "same", "valid"]
SHAPES = [((5, 6), (3, 2)), ((4, 4), (4, 4)), ((2, 3), (4, 5)), ((4, 3), (4, 1))]


def close(got, want, tol=1e-10):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def pair(sa, sb, complex_=False):
    a, b = RNG.normal(size=sa), RNG.normal(size=sb)
    if complex_:
        a, b = a + 1j * RNG.normal(size=sa), b - 0.5j * RNG.normal(size=sb)
    return a, b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_nd_convolutions_match_scipy(mode, shapes):
    for complex_ in (False, True):
        a, b = pair(*shapes, complex_)
        for name in ("convolve", "correlate", "fftconvolve"):
            close(getattr(js, name)(a, b, mode), getattr(ss, name)(a, b, mode))
        close(js.convolve(a, b, mode, method="fft"), ss.convolve(a, b, mode, method="fft"))
    a3, b3 = pair((4, 3, 5), (2, 3, 2))
    close(js.convolve(a3, b3, mode), ss.convolve(a3, b3, mode))
    close(js.correlate(a3[0, 0], b3[0, 0], mode), ss.correlate(a3[0, 0], b3[0, 0], mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_2d_convolutions_and_boundaries_match_scipy(mode, shapes):
    a, b = pair(*shapes, complex_=True)
    close(js.convolve2d(a, b, mode), ss.convolve2d(a, b, mode))
    close(js.correlate2d(a, b, mode), ss.correlate2d(a, b, mode))
    if all(x >= y for x, y in zip(*shapes)):
        for kw in (dict(boundary="wrap"), dict(boundary="symm"), dict(fillvalue=1.5)):
            close(js.convolve2d(a, b, mode, **kw), ss.convolve2d(a, b, mode, **kw))
            close(js.correlate2d(a, b, mode, **kw), ss.correlate2d(a, b, mode, **kw))


def test_fftconvolve_axes():
    a = RNG.normal(size=(3, 8, 5))
    for axes, b_shape in ((1, (3, 4, 5)), ((1, 2), (3, 4, 2)), ([-1], (3, 8, 2))):
        b = RNG.normal(size=b_shape)
        for mode in MODES:
            close(js.fftconvolve(a, b, mode, axes), ss.fftconvolve(a, b, mode, axes))


def test_detrend_matches_scipy():
    x = RNG.normal(size=(6, 40)) + np.linspace(0, 5, 40)
    for kw in (dict(), dict(type="constant"), dict(axis=0), dict(bp=[10, 25]),
               dict(axis=0, type="linear", bp=3)):
        close(js.detrend(x, **kw), ss.detrend(x, **kw))
    close(js.detrend(np.arange(6)), ss.detrend(np.arange(6.)))


@pytest.mark.parametrize("kw", [
    dict(nperseg=32), dict(nperseg=20, noverlap=5, nfft=40), dict(window=("tukey", 0.3),
                                                                  nperseg=16, boundary="even"),
    dict(nperseg=16, boundary="odd", padded=False, detrend="linear"),
    dict(nperseg=16, boundary=None, return_onesided=False), dict(window="boxcar", nperseg=8,
                                                                 boundary="constant"),
], ids=str)
def test_stft_and_istft_match_scipy(kw):
    x = RNG.normal(size=(2, 150))
    f1, t1, z1 = js.stft(x, fs=4.0, **kw)
    f2, t2, z2 = ss.stft(x, fs=4.0, **kw)
    close(f1, f2), close(t1, t2), close(z1, z2)
    inverse = {k: v for k, v in kw.items() if k in ("nperseg", "noverlap", "nfft", "window")}
    if kw.get("boundary", "zeros") is not None:
        onesided = kw.get("return_onesided", True)
        ti1, xi1 = js.istft(z2, fs=4.0, input_onesided=onesided, **inverse)
        ti2, xi2 = ss.istft(z2, fs=4.0, input_onesided=onesided, **inverse)
        close(ti1, ti2), close(xi1, xi2)


def test_istft_axes_and_round_trip():
    x = RNG.normal(size=(3, 200))
    _, _, z = ss.stft(x, nperseg=40)
    zt = np.moveaxis(z, 0, -1)  # (freq, time, batch)
    close(js.istft(zt, nperseg=40, time_axis=1, freq_axis=0)[1],
          ss.istft(zt, nperseg=40, time_axis=1, freq_axis=0)[1])
    _, xr = js.istft(js.stft(x, nperseg=40)[2], nperseg=40)
    close(np.asarray(xr)[:, :200], x)


@pytest.mark.parametrize("kw", [dict(), dict(nperseg=64, average="median"),
                                dict(nperseg=50, noverlap=10, scaling="spectrum",
                                     detrend="linear"),
                                dict(nperseg=32, return_onesided=False, window="hamming")],
                         ids=str)
def test_welch_and_csd_match_scipy(kw):
    x, y = RNG.normal(size=(2, 300)), RNG.normal(size=(2, 280))
    f1, p1 = js.welch(x, fs=10.0, axis=-1, **kw)
    f2, p2 = ss.welch(x, fs=10.0, axis=-1, **kw)
    close(f1, f2), close(p1, p2)
    f1, p1 = js.csd(x, y, fs=10.0, **kw)
    f2, p2 = ss.csd(x, y, fs=10.0, **kw)
    close(f1, f2), close(p1, p2)
    close(js.welch(x.T, axis=0, **kw)[1], ss.welch(x.T, axis=0, **kw)[1])


def test_complex_input_switches_to_two_sided():
    z = RNG.normal(size=100) + 1j * RNG.normal(size=100)
    with pytest.warns(UserWarning, match="complex"):
        f1, p1 = js.welch(z, nperseg=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f2, p2 = ss.welch(z, nperseg=20)
    close(f1, f2), close(p1, p2)


def test_default_nperseg_is_256():
    x = RNG.normal(size=1000)
    close(js.welch(x)[1], ss.welch(x)[1])


def test_gradients_and_jit():
    a, b = RNG.normal(size=(6, 5)), RNG.normal(size=(3, 2))
    check_grads(lambda u, v: js.convolve2d(u, v, "same", boundary="wrap"), (a, b), order=2)
    check_grads(lambda u, v: js.fftconvolve(u, v, "full"), (a, b), order=1)
    x = RNG.normal(size=64)
    check_grads(lambda u: js.welch(u, nperseg=16)[1], (x,), order=1)
    check_grads(lambda u: jnp.abs(js.stft(u, nperseg=16)[2]), (x,), order=1)
    f = numbax.jit(lambda u: js.welch(u, nperseg=16)[1])
    close(f(x), ss.welch(x, nperseg=16)[1])
    g = numbax.jit(lambda u, v: js.correlate(u, v, "same"))
    close(g(a, b), ss.correlate(a, b, "same"))


def test_bad_inputs():
    a = np.ones((4, 4))
    with pytest.raises(NumbaxValueError, match="mode"):
        js.convolve(a, a, "circular")
    with pytest.raises(NumbaxValueError, match="method"):
        js.convolve(a, a, method="winograd")
    with pytest.raises(NumbaxValueError, match="number of dimensions"):
        js.convolve(a, np.ones(3))
    with pytest.raises(NumbaxValueError, match="every dimension"):
        js.convolve(np.ones((4, 2)), np.ones((2, 4)))
    with pytest.raises(NumbaxValueError, match="2-dimensional"):
        js.convolve2d(np.ones(3), np.ones(3))
    with pytest.raises(NumbaxValueError, match="boundary"):
        js.convolve2d(a, a, boundary="reflect101")
    with pytest.raises(NumbaxValueError, match="equal sizes"):
        js.fftconvolve(np.ones((3, 4)), np.ones((2, 4)), axes=1)
    with pytest.raises(NumbaxValueError, match="type"):
        js.detrend(a, type="quadratic")
    with pytest.raises(NumbaxValueError, match="breakpoints"):
        js.detrend(a, bp=9)
    with pytest.raises(NumbaxValueError, match="noverlap"):
        js.stft(np.ones(50), nperseg=10, noverlap=10)
    with pytest.raises(NumbaxValueError, match="nfft"):
        js.welch(np.ones(50), nperseg=10, nfft=5)
    with pytest.raises(NumbaxValueError, match="average"):
        js.welch(np.ones(50), nperseg=10, average="mode")
    with pytest.raises(NumbaxValueError, match="scaling"):
        js.csd(np.ones(50), np.ones(50), scaling="power")
    with pytest.raises(NumbaxValueError, match="at least 2"):
        js.istft(np.ones(5))
    with pytest.raises(NumbaxValueError, match="different axes"):
        js.istft(np.ones((5, 5)), time_axis=0, freq_axis=0)


@pytest.mark.parametrize("module", [signal_module, spectral_module], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
