"""lax.fft in compiled CPU programs (compiler/cpu/runtime/fft.py): every transform type over one
to three axes, float32 kept in single precision, jit against eager, and the worker count the
thread runtime gives."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu.runtime import fft as cpu_fft
from numbax._src.config import config
from numbax._src.lax import fft_library

RNG = np.random.default_rng(20)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [
    lambda x: jnp.fft.fft(x + 1j * x[::-1]), lambda x: jnp.fft.ifft2(x - 0.5j),
    lambda x: jnp.fft.rfftn(x, axes=(-3, -2, -1)), lambda x: jnp.fft.irfft(x + 2j * x, n=9),
    lambda x: jnp.fft.irfft2(jnp.fft.rfft2(x), s=x.shape[-2:]),
], ids=["fft", "ifft2", "rfftn3", "irfft", "rfft2_roundtrip"])
def test_jit_matches_eager(fn, dtype):
    x = RNG.normal(size=(3, 4, 6, 8)).astype(dtype)
    want = fn(x)
    got = numbax.jit(fn)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)
    assert "ft.fft(" in numbax.jit(fn).lower(x).as_text()


def test_workers_follow_the_thread_runtime(monkeypatch):
    seen = []
    real = fft_library.transform

    def spy(x, fft_type, fft_lengths, workers):
        seen.append(workers)
        return real(x, fft_type, fft_lengths, workers)

    monkeypatch.setattr(fft_library, "transform", spy)  # looked up at each call
    z = (RNG.normal(size=1 << 16) + 0j).astype(np.complex64)
    old = config.cpu_threads
    try:
        config.update("cpu_threads", 2)  # a fixed count
        out = cpu_fft.fft(z, 0, (1 << 16,), np.dtype(np.complex64))[0]
        config.update("cpu_threads", 0)  # automatic: one worker for a small transform
        cpu_fft.fft(z[:8], 0, (8,), np.dtype(np.complex64))
    finally:
        config.update("cpu_threads", old)
    assert seen == [2, 1]
    np.testing.assert_allclose(out, np.fft.fft(z), rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_library_gives_numpys_transforms(dtype, monkeypatch):
    """The FFT library (ducc0 where installed) and the scipy.fft fallback, for every type over
    one and two axes, odd and even lengths, against numpy's float64 FFT."""
    ctype = np.result_type(dtype, np.complex64)
    x = RNG.normal(size=(3, 5, 9)).astype(dtype)
    z = (x + 1j * RNG.normal(size=x.shape)).astype(ctype)
    half = np.fft.rfft2(x.astype(np.float64)).astype(ctype)
    cases = [(z, 0, (5, 9), np.fft.fft2(z.astype(np.complex128))),
             (z, 1, (9,), np.fft.ifft(z.astype(np.complex128))),
             (x, 2, (5, 9), np.fft.rfft2(x.astype(np.float64))),
             (half, 3, (5, 9), np.fft.irfft2(half.astype(np.complex128), s=(5, 9))),
             (half[..., :4], 3, (8,), np.fft.irfft(half[..., :4].astype(np.complex128), 8))]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for ducc in (fft_library._ducc0(), None):
        monkeypatch.setattr(fft_library, "_ducc0", lambda ducc=ducc: ducc)
        for operand, kind, lengths, want in cases:
            got = fft_library.transform(operand, kind, lengths, 2)
            assert got.dtype == (dtype if kind == 3 else ctype)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
