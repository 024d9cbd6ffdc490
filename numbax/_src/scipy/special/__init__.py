"""numbax.scipy.special's functions, one module per family; `__all__` lists the public ones."""
from numbax._src.scipy.special.bessel import *  # noqa: F403
from numbax._src.scipy.special.bessel import __all__ as _bessel
from numbax._src.scipy.special.error_fns import *  # noqa: F403
from numbax._src.scipy.special.error_fns import __all__ as _error
from numbax._src.scipy.special.expint import *  # noqa: F403
from numbax._src.scipy.special.expint import __all__ as _expint
from numbax._src.scipy.special.gamma_fns import *  # noqa: F403
from numbax._src.scipy.special.gamma_fns import __all__ as _gamma
from numbax._src.scipy.special.hypergeometric import *  # noqa: F403
from numbax._src.scipy.special.hypergeometric import __all__ as _hyper
from numbax._src.scipy.special.log_fns import *  # noqa: F403
from numbax._src.scipy.special.log_fns import __all__ as _logs
from numbax._src.scipy.special.normal import *  # noqa: F403
from numbax._src.scipy.special.normal import __all__ as _normal
from numbax._src.scipy.special.normal import _log_ndtr_impl, _ndtr  # noqa: F401

__all__ = sorted([*_bessel, *_error, *_expint, *_gamma, *_hyper, *_logs, *_normal])
