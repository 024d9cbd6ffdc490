"""numbax.scipy: scipy's special functions, distributions and small modules on traced arrays."""
from numbax.scipy import (  # noqa: F401
    cluster,
    integrate,
    interpolate,
    ndimage,
    optimize,
    spatial,
    special,
    stats,
)
