"""threefry2x32 in kernels: each counter pair's hash is one call of a compiled scalar helper.

The hash is 20 rounds of uint32 adds, rotations and xors. Expanded into lax operations, one
draw put ~110 lines into the kernel Numba compiles, and Numba's front end (SSA reconstruction,
liveness) grows faster than linearly in a function's lines: a scan body drawing binomial and
Poisson variates (16 hashes, 2,000 of its 2,300 lines) took 88 s to compile. As one helper,
compiled once and inlined by LLVM (scalar_helpers.threefry_word), a hash is one line.

A kernel's expression has one value, and the hash has two: `threefry_word` returns both as one
uint64 (the first in its high half) and the expansion splits it with a shift and two
conversions, which LLVM folds away once the helper is inlined.
"""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Primitive, ShapedArray, Var
from numbax._src.interpreters import ad, batching
from numbax._src.lax import convert as lconv
from numbax._src.lax import elementwise as lx
from numbax._src.lax.rng import threefry2x32_words
from numbax._src.prng import threefry2x32_p

_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)

threefry_word_p = Primitive("threefry_word")


def _abstract_eval(*args: ShapedArray) -> list[ShapedArray]:
    return [ShapedArray(core.abstract_eval(threefry2x32_p, list(args), {})[0].shape, _U64)]


def _impl(*args) -> list[np.ndarray]:
    hi, lo = threefry2x32_words(*args)
    return [(hi.astype(_U64) << np.uint64(32)) | lo.astype(_U64)]


core.abstract_eval_rules[threefry_word_p] = _abstract_eval
core.impl_rules[threefry_word_p] = _impl
ad.non_differentiable.add(threefry_word_p)
batching.defbroadcasting(threefry_word_p)


def expand_threefry(eqn: JaxprEqn) -> ClosedJaxpr:
    """threefry2x32's equation as threefry_word and the split of its uint64 word."""
    ins = [Var(x.aval) for x in eqn.invars]
    shape = eqn.outvars[0].aval.shape
    word, high = Var(ShapedArray(shape, _U64)), Var(ShapedArray(shape, _U64))
    first, second = Var(ShapedArray(shape, _U32)), Var(ShapedArray(shape, _U32))
    narrow = {"new_dtype": _U32, "weak_type": False}
    eqns = [
        JaxprEqn(threefry_word_p, ins, [word], {}),
        JaxprEqn(lx.shift_right_logical_p,
                 [word, Literal(np.uint64(32), ShapedArray((), _U64))], [high], {}),
        JaxprEqn(lconv.convert_element_type_p, [high], [first], narrow),
        JaxprEqn(lconv.convert_element_type_p, [word], [second], narrow),
    ]
    return ClosedJaxpr(Jaxpr([], ins, eqns, [first, second]), [])
