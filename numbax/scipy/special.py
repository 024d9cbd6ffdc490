"""numbax.scipy.special: scipy.special on traced arrays."""
from numbax._src.scipy.special import *  # noqa: F403
