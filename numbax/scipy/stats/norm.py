"""numbax.scipy.stats.norm: the normal distribution's logpdf, pdf, cdf, logcdf, ppf, sf."""
from numbax._src.scipy.stats import norm_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats import norm_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats import norm_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats import norm_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats import norm_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats import norm_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats import norm_sf as sf  # noqa: F401
