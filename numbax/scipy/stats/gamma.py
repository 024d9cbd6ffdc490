"""numbax.scipy.stats.gamma: the gamma distribution's functions."""
from numbax._src.scipy.stats.shape import gamma_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.shape import gamma_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.shape import gamma_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import gamma_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.shape import gamma_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.shape import gamma_sf as sf  # noqa: F401
