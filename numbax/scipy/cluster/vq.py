"""numbax.scipy.cluster.vq: assignment of observations to the nearest code."""
from numbax._src.scipy.cluster import vq  # noqa: F401
