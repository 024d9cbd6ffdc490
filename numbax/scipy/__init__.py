"""numbax.scipy: scipy's special functions, distributions, linear algebra, FFT, signal
processing and the small modules (optimize, integrate, ndimage, interpolate, cluster, spatial) on
traced arrays (jax.scipy)."""
from numbax.scipy import (  # noqa: F401
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    optimize,
    signal,
    spatial,
    special,
    stats,
)
