"""Lowerings of the random primitives: threefry2x32 expands into the compiled helper's word
and its split (compiler/threefry.py); the gamma sampler's primitive (random_gamma.py) runs its
vectorised rejection sampler from the driver (JAX inlines its own sampler; numbax's numpy one
draws the same bits)."""
from __future__ import annotations

from numbax._src.compiler.lowerings.forms import call
from numbax._src.compiler.registry import EAGER, Fusion, register
from numbax._src.compiler.threefry import expand_threefry, threefry_word_p
from numbax._src.prng import threefry2x32_p
from numbax._src.random_gamma import random_gamma_p

register(random_gamma_p, backend="cpu", library=EAGER)
register(threefry2x32_p, expand=expand_threefry)
# heavy: a hundred instructions an element; stored, never recomputed by a later kernel
register(threefry_word_p, Fusion.ELEMENTWISE, scalar=call("sc.threefry_word"), heavy=True)
register(threefry_word_p, backend="cpu", array=call("sc.threefry_words"))
