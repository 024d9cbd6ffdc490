"""numbax.scipy.stats.nbinom: the nbinom distribution's functions."""
from numbax._src.scipy.stats.discrete import nbinom_logpmf as logpmf  # noqa: F401
from numbax._src.scipy.stats.discrete import nbinom_pmf as pmf  # noqa: F401
