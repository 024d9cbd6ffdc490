"""numbax.scipy.stats: distributions (norm)."""
from numbax.scipy.stats import norm  # noqa: F401
