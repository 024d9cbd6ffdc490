"""numbax.scipy: scipy's special functions and distributions on traced arrays."""
from numbax.scipy import special, stats  # noqa: F401

# isort: split
# linear algebra (numbax/scipy/linalg.py)
from numbax.scipy import linalg  # noqa: F401
