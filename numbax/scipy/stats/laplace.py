"""numbax.scipy.stats.laplace: the laplace distribution's functions."""
from numbax._src.scipy.stats.location_scale import laplace_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import laplace_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import laplace_pdf as pdf  # noqa: F401
