"""numbax.scipy.stats.gumbel_l: the gumbel_l distribution's functions."""
from numbax._src.scipy.stats.location_scale import gumbel_l_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_l_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_l_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_l_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_l_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_l_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_l_sf as sf  # noqa: F401
