"""Checks of lax.fft on the GPU through cuFFT (cuda/runtime/cufft.py). Under the simulator the
one library call is replaced by a numpy model of its contract (numpy.fft on host copies of the
flat buffers, with the plan's shapes, axes and IRFFT lengths, and the single/double precision
cuFFT keeps), so the driver's plan and buffers are what is tested; on a card with CuPy the
library itself runs. The truth is numbax's eager fft on the CPU (scipy.fft). Without CuPy fft
runs on the host, also checked."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cuda.runtime import cufft
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from tests.compiler.cuda.sim_checks import check, close, gjit
from tests.compiler.cuda.sim_support import library_model

RNG = np.random.default_rng(1801)
_SINGLE = {np.dtype(np.complex64), np.dtype(np.float32)}


def model_call(x, out, f: cufft.Fft):
    """cuFFT's transform as numpy.fft computes it, on host copies of the flat buffers."""
    k = len(f.fft_lengths)
    assert 1 <= k <= 3 and f.fft_type in (cufft.FFT, cufft.IFFT, cufft.RFFT, cufft.IRFFT)
    assert x.size == int(np.prod(f.in_shape)) and out.size == int(np.prod(f.out_shape))
    assert (x.dtype in _SINGLE) == (out.dtype in _SINGLE), (x.dtype, out.dtype)
    assert (out.dtype.kind == "c") == (f.fft_type != cufft.IRFFT), (out.dtype, f)
    if f.fft_type != cufft.IRFFT:
        assert f.in_shape[-k:] == f.fft_lengths, f
    host = x.copy_to_host().reshape(f.in_shape)
    axes = tuple(range(len(f.in_shape) - k, len(f.in_shape)))
    fn = (np.fft.fftn, np.fft.ifftn, np.fft.rfftn, np.fft.irfftn)[f.fft_type]
    y = fn(host, s=f.fft_lengths, axes=axes) if f.fft_type == cufft.IRFFT else fn(host, axes=axes)
    assert y.shape == f.out_shape, (y.shape, f)
    out.copy_to_device(np.ascontiguousarray(y, dtype=out.dtype).reshape(-1))


def cufft_model():
    """cuFFT 'available', its call answered by the model (under the simulator only)."""
    return library_model(cufft, model_call)


def _complex(shape, dtype):
    return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(dtype)


def _cases():
    """(name, fn, operand) over 1-3 axes, every transform type, single and double precision."""
    out = []
    for cdt, rdt in ((np.complex64, np.float32), (np.complex128, np.float64)):
        z, r = _complex((2, 3, 4), cdt), RNG.normal(size=(2, 3, 4)).astype(rdt)
        half = _complex((2, 3, 3), cdt)  # IRFFT to (.., 3, 4) and (.., 5) last lengths
        out += [(f"fft {cdt.__name__} 1", lambda a: lax.fft(a, "fft", (4,)), z),
                (f"ifft {cdt.__name__} 2", lambda a: lax.fft(a, "ifft", (3, 4)), z),
                (f"fft {cdt.__name__} 3", lambda a: lax.fft(a, "fft", (2, 3, 4)), z),
                (f"rfft {rdt.__name__} 1", lambda a: lax.fft(a, "rfft", (4,)), r),
                (f"rfft {rdt.__name__} 2", lambda a: lax.fft(a, "rfft", (3, 4)), r),
                (f"rfft {rdt.__name__} 3", lambda a: lax.fft(a, "rfft", (2, 3, 4)), r),
                (f"irfft {cdt.__name__} 2", lambda a: lax.fft(a, "irfft", (3, 4)), half),
                (f"irfft {cdt.__name__} 1 odd", lambda a: lax.fft(a, "irfft", (5,)), half),
                (f"irfft {cdt.__name__} 3", lambda a: lax.fft(a, "irfft", (2, 3, 5)), half)]
    return out


@check
def fft_through_cufft_model():
    with cufft_model():
        for name, f, a in _cases():
            fj = gjit(f)
            want = np.asarray(f(a))  # eager, on the CPU
            tol = 2e-5 if a.dtype in _SINGLE else 1e-12
            try:
                close(fj(a), want, rtol=tol, atol=tol * 4)
                if cuda_runtime.simulator_enabled() or cufft.available():
                    assert "cf.fft(" in fj.lower(a).as_text(), "not through cuFFT"
            except AssertionError as e:
                raise AssertionError(f"{name}: {e}") from None
        # reverse mode: RFFT's transpose is an FFT of the padded cotangent
        x = RNG.normal(size=(3, 8))
        loss = lambda a: jnp.sum(jnp.abs(jnp.fft.rfft(a * 2.0)) ** 2)
        close(gjit(numbax.grad(loss))(x), np.asarray(numbax.grad(loss)(x)), rtol=1e-12,
              atol=1e-12)


@check
def fft_without_cupy_runs_on_the_host():
    """No CuPy (the simulator): fft runs its eager implementation between kernels."""
    z = _complex((2, 4), np.complex64)
    f = gjit(lambda a: lax.fft(a * 2, "ifft", (4,)))
    close(f(z), np.fft.ifft(z * 2).astype(np.complex64), rtol=2e-6, atol=1e-6)
    text = f.lower(z).as_text()
    if cufft.available():  # a card with CuPy: the library runs
        assert "cf.fft(" in text, text[-1500:]
    else:
        assert "rt.on_host(" in text and "cf.fft(" not in text, text[-1500:]
