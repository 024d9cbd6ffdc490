"""numbax.scipy.cluster: vector quantization (the vq module)."""
from numbax.scipy.cluster import vq  # noqa: F401
