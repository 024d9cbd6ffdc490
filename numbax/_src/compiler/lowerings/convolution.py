"""Convolutions, windowed reductions and FFT (lax/convolution.py, reduce_window.py,
windowed_reductions.py, fft.py) under jit: their eager implementations (im2col + BLAS
products, strided windows, pocketfft) run from the driver until compiled kernels replace them
(issue 18)."""
from __future__ import annotations

from numbax._src.compiler.registry import EAGER, register
from numbax._src.lax import convolution, fft, reduce_window, windowed_reductions

for _prim in (convolution.conv_general_dilated_p, fft.fft_p, reduce_window.reduce_window_p,
              windowed_reductions.reduce_window_sum_p, windowed_reductions.reduce_window_max_p,
              windowed_reductions.reduce_window_min_p,
              windowed_reductions.select_and_gather_add_p,
              windowed_reductions.select_and_scatter_add_p,
              windowed_reductions.select_and_scatter_p):
    register(_prim, backend="cpu", library=EAGER)
