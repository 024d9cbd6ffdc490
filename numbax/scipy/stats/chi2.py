"""numbax.scipy.stats.chi2: the chi2 distribution's functions."""
from numbax._src.scipy.stats.shape import chi2_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.shape import chi2_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.shape import chi2_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import chi2_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.shape import chi2_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.shape import chi2_sf as sf  # noqa: F401
