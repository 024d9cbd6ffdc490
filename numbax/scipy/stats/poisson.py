"""numbax.scipy.stats.poisson: the poisson distribution's functions."""
from numbax._src.scipy.stats.discrete import poisson_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.discrete import poisson_entropy as entropy  # noqa: F401
from numbax._src.scipy.stats.discrete import poisson_logpmf as logpmf  # noqa: F401
from numbax._src.scipy.stats.discrete import poisson_pmf as pmf  # noqa: F401
