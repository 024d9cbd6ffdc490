"""numbax.scipy: scipy's special functions and distributions on traced arrays."""
from numbax.scipy import special, stats  # noqa: F401
