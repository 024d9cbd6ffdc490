"""numbax.scipy.ndimage: interpolation of arrays at fractional coordinates."""
from numbax._src.scipy.ndimage import map_coordinates  # noqa: F401
