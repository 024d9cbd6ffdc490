"""numbax.scipy.stats.multivariate_normal: the multivariate_normal distribution's functions."""
from numbax._src.scipy.stats.multivariate import multivariate_normal_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.multivariate import multivariate_normal_pdf as pdf  # noqa: F401
