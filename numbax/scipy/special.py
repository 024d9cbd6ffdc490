"""numbax.scipy.special: scipy.special on traced arrays, with JAX's names and derivatives."""
from numbax._src.scipy.special import *  # noqa: F403
from numbax._src.scipy.special import __all__  # noqa: F401
