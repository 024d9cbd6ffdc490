"""numbax.scipy.stats.cauchy: the cauchy distribution's functions."""
from numbax._src.scipy.stats.location_scale import cauchy_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import cauchy_isf as isf  # noqa: F401
from numbax._src.scipy.stats.location_scale import cauchy_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import cauchy_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import cauchy_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.location_scale import cauchy_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import cauchy_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats.location_scale import cauchy_sf as sf  # noqa: F401
