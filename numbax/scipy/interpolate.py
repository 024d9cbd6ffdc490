"""numbax.scipy.interpolate: interpolation on rectilinear grids."""
from numbax._src.scipy.interpolate import RegularGridInterpolator  # noqa: F401
