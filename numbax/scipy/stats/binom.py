"""numbax.scipy.stats.binom: the binom distribution's functions."""
from numbax._src.scipy.stats.discrete import binom_logpmf as logpmf  # noqa: F401
from numbax._src.scipy.stats.discrete import binom_pmf as pmf  # noqa: F401
