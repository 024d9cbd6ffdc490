"""numbax.numpy.fft: numpy.fft (jax.numpy.fft) on traced arrays."""
from numbax._src.numpy.fft import *  # noqa: F403
