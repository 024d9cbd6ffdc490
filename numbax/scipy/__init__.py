"""numbax.scipy: scipy's special functions, distributions, linear algebra, FFT and signal processing
on traced arrays (jax.scipy)."""
from numbax.scipy import fft, linalg, signal, special, stats  # noqa: F401
