"""numbax.scipy.fft: scipy.fft's discrete cosine transforms on traced arrays."""
from numbax._src.scipy.fft import *  # noqa: F403
