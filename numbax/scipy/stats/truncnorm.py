"""numbax.scipy.stats.truncnorm: the truncnorm distribution's functions."""
from numbax._src.scipy.stats.shape import truncnorm_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.shape import truncnorm_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.shape import truncnorm_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import truncnorm_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.shape import truncnorm_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.shape import truncnorm_sf as sf  # noqa: F401
