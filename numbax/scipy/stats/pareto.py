"""numbax.scipy.stats.pareto: the pareto distribution's functions."""
from numbax._src.scipy.stats.shape import pareto_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.shape import pareto_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.shape import pareto_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import pareto_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.shape import pareto_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.shape import pareto_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats.shape import pareto_sf as sf  # noqa: F401
