"""numbax.scipy.stats.geom: the geom distribution's functions."""
from numbax._src.scipy.stats.discrete import geom_logpmf as logpmf  # noqa: F401
from numbax._src.scipy.stats.discrete import geom_pmf as pmf  # noqa: F401
