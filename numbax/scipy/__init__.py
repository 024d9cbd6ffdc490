"""numbax.scipy: scipy's special functions and distributions on traced arrays."""
from numbax.scipy import fft, signal, special, stats  # noqa: F401
