"""The gamma sampler's primitive (random_gamma.py): its vectorised rejection sampler runs from
the driver (JAX inlines its own sampler; numbax's numpy one draws the same bits)."""
from __future__ import annotations

from numbax._src.compiler.registry import EAGER, register
from numbax._src.random_gamma import random_gamma_p

register(random_gamma_p, backend="cpu", library=EAGER)
