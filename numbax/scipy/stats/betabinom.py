"""numbax.scipy.stats.betabinom: the betabinom distribution's functions."""
from numbax._src.scipy.stats.discrete import betabinom_logpmf as logpmf  # noqa: F401
from numbax._src.scipy.stats.discrete import betabinom_pmf as pmf  # noqa: F401
