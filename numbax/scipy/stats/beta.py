"""numbax.scipy.stats.beta: the beta distribution's functions."""
from numbax._src.scipy.stats.shape import beta_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.shape import beta_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.shape import beta_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import beta_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.shape import beta_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.shape import beta_sf as sf  # noqa: F401
