"""lax.fft on the GPU through cuFFT, via CuPy's binding (cupy.fft): the one door to the vendor
library, which numbax does not reimplement (cuFFT's kernels are tuned per size and card, and
CuPy maintains the binding, its plan cache and the dtype rules).

The driver passes its flat device buffers and the transform's plan (`Fft`); `_call` views
them as CuPy arrays of the logical shapes through __cuda_array_interface__ (no copy), runs
cupy.fft's n-dimensional transform over the last len(fft_lengths) axes (complex64 and float32
stay in single precision, as cuFFT's C2C/R2C/C2R; complex128 and float64 in double), and
copies the result into the driver-allocated output (one device-to-device copy).
IFFT and IRFFT are scaled by 1/N, as lax.fft; IRFFT's fft_lengths give the output's sizes.

`available()` is False without CuPy or under Numba's CUDA simulator; the driver then runs fft
on the host (its eager implementation, scipy.fft, with the operand copied back and forth),
decided when the function is compiled (lowerings/convolution.py's library_ok)."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

from numbax._src.compiler.cuda.config import prod
from numbax._src.compiler.cuda.runtime import memory
from numbax._src.core import JaxprEqn

FFT, IFFT, RFFT, IRFFT = 0, 1, 2, 3  # lax.FftType's values


class Fft(NamedTuple):
    """One transform, as the driver passes it (plain ints, so its repr is the generated
    source): lax.fft's fft_type and fft_lengths, and the operand's and output's shapes."""
    fft_type: int
    fft_lengths: tuple[int, ...]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]


@functools.cache
def _cupy() -> Any:
    """CuPy, or None when it is not installed."""
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def available() -> bool:
    """Whether fft can go to cuFFT: CuPy installed and a real GPU (not the simulator)."""
    return not memory.simulator_enabled() and _cupy() is not None


def takes(eqn: JaxprEqn) -> bool:
    """Whether cuFFT runs this equation: no empty operand, output or transform (those run the
    eager implementation, which says what is wrong with a zero length)."""
    return all(prod(v.aval.shape) > 0 for v in [*eqn.invars, *eqn.outvars])


def plan(eqn: JaxprEqn) -> Fft:
    p = eqn.params
    return Fft(int(p["fft_type"]), tuple(int(n) for n in p["fft_lengths"]),
               tuple(eqn.invars[0].aval.shape), tuple(eqn.outvars[0].aval.shape))


def fft(x: Any, out: Any, f: Fft) -> None:
    """out = lax.fft(x) for the flat device buffers x and out (out allocated by the driver)."""
    _call(x, out, f)


def _call(x: Any, out: Any, f: Fft) -> None:
    """One cuFFT transform of the flat device buffer x (of logical shape f.in_shape) into the
    flat buffer out (f.out_shape), through cupy.fft on zero-copy views. Tests replace this
    function with a numpy model of the same contract."""
    cupy = _cupy()
    k = len(f.fft_lengths)
    axes = tuple(range(len(f.in_shape) - k, len(f.in_shape)))
    with cupy.cuda.Device(memory.current_device_id()):
        xc = cupy.asarray(x).reshape(f.in_shape)  # a view through __cuda_array_interface__
        if f.fft_type == FFT:
            y = cupy.fft.fftn(xc, axes=axes)
        elif f.fft_type == IFFT:
            y = cupy.fft.ifftn(xc, axes=axes)
        elif f.fft_type == RFFT:
            y = cupy.fft.rfftn(xc, axes=axes)
        else:  # cupy copies the operand first: cuFFT's C2R overwrites its input
            y = cupy.fft.irfftn(xc, s=f.fft_lengths, axes=axes)
        assert y.dtype == out.dtype and y.shape == f.out_shape, (y.dtype, y.shape, f)
        cupy.asarray(out).reshape(f.out_shape)[...] = y
