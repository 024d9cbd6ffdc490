"""numbax.scipy.signal: scipy.signal's convolutions and spectral estimates on traced arrays."""
from numbax._src.scipy.signal import *  # noqa: F403
from numbax._src.scipy.spectral import *  # noqa: F403
