"""numbax.scipy: scipy's special functions, distributions, linear algebra, FFT, signal
processing, the small modules (optimize, integrate, ndimage, interpolate, cluster, spatial) and
the sparse module's iterative solvers on traced arrays (jax.scipy)."""
from numbax.scipy import (  # noqa: F401
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    optimize,
    signal,
    sparse,
    spatial,
    special,
    stats,
)
