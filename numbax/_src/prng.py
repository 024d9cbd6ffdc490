"""threefry2x32 and the key plumbing (seed, split, fold_in, random_bits), in lax primitives.

The bit layout is JAX's default (`jax_threefry_partitionable=True`, the default since JAX 0.5):
a draw of shape `s` hashes the 64-bit counters iota(prod(s)).reshape(s), split into hi/lo
uint32 halves, and 32-bit words are `hash[0] ^ hash[1]`. The hash is one primitive,
`threefry2x32` (as in JAX's jaxprs); the plumbing around it is uint32 lax ops, so it all runs
eagerly, traces to a jaxpr, batches under vmap and compiles under jit. Under jit the hash is one
call of a compiled helper per element (compiler/threefry.py): written out as its 100-odd lax
ops, each draw of a program added that many lines to the kernel Numba compiled, and a scan body
drawing from three samplers took minutes to compile.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes, tree_util
from numbax._src.config import config
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxOverflowError, NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import KeyArrayBase, unsupported
from numbax._src.lax.rng import threefry2x32_words

_U32 = np.dtype(np.uint32)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32,
               64: np.dtype(np.uint64)}


# ----------------------------------------------------------------------------- the hash

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)


def _threefry_abstract_eval(*args: ShapedArray) -> list[ShapedArray]:
    if any(a.dtype != _U32 for a in args):
        raise NumbaxTypeError("threefry2x32: operands have dtypes "
                              f"{[str(a.dtype) for a in args]}, expected uint32 each.")
    shapes = {a.shape for a in args if a.shape}
    if len(shapes) > 1:
        raise NumbaxTypeError(f"threefry2x32: operands have shapes {[a.shape for a in args]}, "
                              "expected one shape (or rank 0, broadcast).")
    shape = shapes.pop() if shapes else ()
    return [ShapedArray(shape, _U32), ShapedArray(shape, _U32)]


core.abstract_eval_rules[threefry2x32_p] = _threefry_abstract_eval
core.impl_rules[threefry2x32_p] = lambda *args: list(threefry2x32_words(*args))
ad.non_differentiable.add(threefry2x32_p)
batching.defbroadcasting(threefry2x32_p)


def threefry2x32(k1: Any, k2: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """The Threefry-2x32 block cipher (20 rounds) of counters (x0, x1) under key (k1, k2).

    uint32 operands of one shape, or rank 0 (broadcast); bit-identical to JAX's hash.
    """
    return tuple(threefry2x32_p.bind(k1, k2, x0, x1))


# ----------------------------------------------------------------------------- key data


def _key_halves(key_data: Any) -> tuple[Any, Any]:
    """(k1, k2) rank-0 uint32 values of a uint32[2] key."""
    k1 = shape_ops.reshape(shape_ops.slice(key_data, (0,), (1,)), ())
    k2 = shape_ops.reshape(shape_ops.slice(key_data, (1,), (2,)), ())
    return k1, k2


def iota_2x32_shape(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """(hi, lo) uint32 halves of the 64-bit iota(prod(shape)).reshape(shape)."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NumbaxValueError(
            f"numbax.random: shape {shape} has {size} elements, expected fewer than 2**32. "
            "Draw in smaller pieces (split the key)."
        )
    hi = shape_ops.full(shape, 0, _U32)
    if not shape:
        return hi, hi
    lo = shape_ops.reshape(shape_ops.iota(_U32, size), shape)
    return hi, lo


def _hash_shape(key_data: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    k1, k2 = _key_halves(key_data)
    hi, lo = iota_2x32_shape(shape)
    return threefry2x32(k1, k2, hi, lo)


def seed_to_key_data(seed: Any, api: str = "random.PRNGKey") -> Any:
    """JAX's threefry_seed: a 64-bit seed becomes [hi, lo]; a 32-bit one becomes [0, seed].

    A Python int seed must fit in int64, as in JAX (which converts it with np.int64 first).
    """
    if isinstance(seed, int) and not isinstance(seed, bool) and not (
            -2 ** 63 <= seed < 2 ** 63):
        raise NumbaxOverflowError(
            f"{api}: seed is {seed}, expected an integer in [-2**63, 2**63) (a 64-bit seed). "
            "Reduce it first, e.g. seed % 2**63."
        )
    if isinstance(seed, (int, np.integer)):
        value = int(seed)
        if not config.jax_enable_x64 or np.dtype(getattr(seed, "dtype", np.int64)).itemsize < 8:
            value &= 0xFFFFFFFF  # JAX wraps the seed to 32 bits first
        value &= 0xFFFFFFFFFFFFFFFF
        return np.array([value >> 32, value & 0xFFFFFFFF], dtype=_U32)
    aval = get_aval(seed)
    lo = ew.convert_element_type(seed, _U32)
    if aval.dtype.itemsize == 8:
        hi = ew.convert_element_type(ew.shift_right_logical(seed, np.array(32, aval.dtype)),
                                     _U32)
    else:
        hi = shape_ops.full((), 0, _U32)
    return shape_ops.concatenate(
        [shape_ops.reshape(hi, (1,)), shape_ops.reshape(lo, (1,))], 0)


def split_data(key_data: Any, shape: tuple[int, ...]) -> Any:
    """uint32[*shape, 2] keys derived from one uint32[2] key (JAX's foldlike split)."""
    b1, b2 = _hash_shape(key_data, shape)
    return shape_ops.concatenate(
        [shape_ops.expand_dims(b1, (len(shape),)), shape_ops.expand_dims(b2, (len(shape),))],
        len(shape))


def fold_in_data(key_data: Any, data: Any) -> Any:
    """uint32[2]: the key hashed at counter (0, data)."""
    k1, k2 = _key_halves(key_data)
    zero = shape_ops.full((1,), 0, _U32)
    b1, b2 = threefry2x32(k1, k2, zero, shape_ops.reshape(data, (1,)))
    return shape_ops.concatenate([b1, b2], 0)


def random_bits(key_data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """Uniform unsigned integers of `bit_width` bits and shape `shape`."""
    return _combine_bits(*_hash_shape(key_data, shape), bit_width)


# Many keys at once, uint32[n, 2]: what vmap of the one-key functions gives, written out so that
# a loop over n keys (the gamma sampler's) runs as whole-array steps.


def _hash_many(keys: Any, count: int) -> tuple[Any, Any]:
    """threefry of counters 0..count-1 under each of n keys: two uint32[n, count]."""
    n = get_aval(keys).shape[0]
    k1 = shape_ops.broadcast_in_dim(shape_ops.slice(keys, (0, 0), (n, 1)), (n, count), (0, 1))
    k2 = shape_ops.broadcast_in_dim(shape_ops.slice(keys, (0, 1), (n, 2)), (n, count), (0, 1))
    lo = shape_ops.broadcast_in_dim(shape_ops.iota(_U32, count), (n, count), (1,))
    return threefry2x32(k1, k2, shape_ops.full((n, count), 0, _U32), lo)


def split_many(keys: Any, num: int) -> Any:
    """uint32[n, num, 2]: split_data(k, (num,)) of each of n keys."""
    b1, b2 = _hash_many(keys, num)
    return shape_ops.concatenate(
        [shape_ops.expand_dims(b1, (2,)), shape_ops.expand_dims(b2, (2,))], 2)


def random_bits_many(keys: Any, bit_width: int) -> Any:
    """One draw of random_bits(k, bit_width, ()) per key: uint[n]."""
    n = get_aval(keys).shape[0]
    b1, b2 = (shape_ops.reshape(b, (n,)) for b in _hash_many(keys, 1))
    return _combine_bits(b1, b2, bit_width)


def _combine_bits(b1: Any, b2: Any, bit_width: int) -> Any:
    if bit_width == 64:
        u64 = UINT_DTYPES[64]
        hi = ew.convert_element_type(b1, u64)
        lo = ew.convert_element_type(b2, u64)
        return ew.bitwise_or(ew.shift_left(hi, np.uint64(32)), lo)
    bits = ew.bitwise_xor(b1, b2)
    if bit_width == 32:
        return bits
    return ew.convert_element_type(bits, UINT_DTYPES[bit_width])


# ----------------------------------------------------------------------------- typed keys


class KeyTy:
    """The dtype of typed threefry key arrays (JAX's `KeyTy`): named and printed `key<fry>`."""

    __slots__ = ()
    name = "key<fry>"
    itemsize = 8  # two uint32 words
    impl_name = "threefry2x32"
    type = dtypes.prng_key  # the scalar-type category, as numpy dtypes' `.type`

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyTy)

    def __hash__(self) -> int:
        return hash((KeyTy, self.impl_name))


KEY_DTYPE = KeyTy()


def _jnp() -> Any:
    from numbax._src import jnp

    return jnp


class PRNGKeyArray(KeyArrayBase):
    """A typed threefry key array (what `numbax.random.key` returns): uint32[..., 2] data.

    It is a pytree whose one child is the data, so keys pass through jit/vmap/scan; its
    `shape` is the key-array shape (the data shape without the trailing 2) and its dtype prints
    as JAX's, `key<fry>`. numbax.numpy's and lax's structural functions take it (through
    lax/key_arrays.py); arithmetic and reductions refuse it, as in JAX. Unlike JAX: tree_util
    sees the uint32 data as its leaf.
    """

    __slots__ = ("_data",)
    __hash__ = None  # type: ignore[assignment]
    dtype = KEY_DTYPE

    def __init__(self, data: Any) -> None:
        self._data = data

    def _word(self, i: int) -> Any:
        return shape_ops.index_in_dim(self._data, i, self.ndim, keepdims=False)

    @classmethod
    def _from_words(cls, words: Sequence[Any]) -> PRNGKeyArray:
        ndim = get_aval(words[0]).ndim
        assert all(get_aval(w).dtype == _U32 for w in words), "key words must stay uint32"
        return cls(shape_ops.concatenate([shape_ops.expand_dims(w, (ndim,)) for w in words],
                                         ndim))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(get_aval(self._data).shape[:-1])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return KEY_DTYPE.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a key array of shape ())")
        return self.shape[0]

    def __getitem__(self, idx: Any) -> PRNGKeyArray:
        return _jnp()._getitem(self, idx)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(len(self)))

    def __bool__(self) -> bool:
        raise TypeError("key array cannot be converted to boolean.")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise NumbaxTypeError(
            "PRNGKeyArray: a key array cannot be converted to a numpy array. Use "
            "numbax.random.key_data(keys) for its uint32 data."
        )

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return _jnp().equal(self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return _jnp().not_equal(self, other)

    @property
    def at(self) -> Any:
        return _jnp()._IndexUpdateHelper(self)

    def reshape(self, *shape: Any, order: str = "C") -> PRNGKeyArray:
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _jnp().reshape(self, shape, order=order)

    def flatten(self, order: str = "C") -> PRNGKeyArray:
        return _jnp().ravel(self, order=order)

    ravel = flatten

    def squeeze(self, axis: Any = None) -> PRNGKeyArray:
        return _jnp().squeeze(self, axis)

    def swapaxes(self, axis1: int, axis2: int) -> PRNGKeyArray:
        return _jnp().swapaxes(self, axis1, axis2)

    def take(self, indices: Any, axis: int | None = None, **kwargs: Any) -> PRNGKeyArray:
        return _jnp().take(self, indices, axis=axis, **kwargs)

    def transpose(self, *axes: Any) -> PRNGKeyArray:
        if not axes or axes == (None,):
            axes = None
        elif len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _jnp().transpose(self, axes)

    @property
    def T(self) -> PRNGKeyArray:
        return self.transpose()

    def copy(self) -> PRNGKeyArray:
        return PRNGKeyArray(self._data)

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._data}"


def _refused_operator(name: str) -> Any:
    def method(self: PRNGKeyArray, *args: Any) -> Any:
        raise unsupported(f"numbax.numpy.{name}", "the operand")

    method.__name__ = f"__{name}__"
    return method


# Arithmetic, ordering and bitwise operators: JAX refuses them on keys (TypeError), so do we.
for _dunder, _name in (
        ("add", "add"), ("radd", "add"), ("sub", "subtract"), ("rsub", "subtract"),
        ("mul", "multiply"), ("rmul", "multiply"), ("truediv", "divide"),
        ("rtruediv", "divide"), ("floordiv", "floor_divide"), ("rfloordiv", "floor_divide"),
        ("mod", "remainder"), ("rmod", "remainder"), ("pow", "power"), ("rpow", "power"),
        ("matmul", "matmul"), ("rmatmul", "matmul"), ("and", "bitwise_and"),
        ("rand", "bitwise_and"), ("or", "bitwise_or"), ("ror", "bitwise_or"),
        ("xor", "bitwise_xor"), ("rxor", "bitwise_xor"), ("lshift", "left_shift"),
        ("rshift", "right_shift"), ("neg", "negative"), ("pos", "positive"),
        ("abs", "absolute"), ("invert", "invert"), ("lt", "less"), ("le", "less_equal"),
        ("gt", "greater"), ("ge", "greater_equal")):
    setattr(PRNGKeyArray, f"__{_dunder}__", _refused_operator(_name))


tree_util.register_pytree_node(
    PRNGKeyArray, lambda k: ((k._data,), None), lambda _, children: PRNGKeyArray(children[0]))


def check_key(api: str, key: Any, allow_batched: bool = False,
              arg: str = "key") -> tuple[Any, bool]:
    """(uint32[..., 2] data, was_typed) of a typed or raw key; a clear error naming `arg`."""
    if isinstance(key, PRNGKeyArray):
        data, typed = key._data, True
    else:
        try:
            aval = get_aval(key)
        except Exception as err:
            raise NumbaxTypeError(
                f"{api}: {arg} has type {type(key).__name__}, expected a PRNG key. Create one "
                "with numbax.random.key(seed) or numbax.random.PRNGKey(seed)."
            ) from err
        if aval.dtype != _U32 or aval.ndim < 1 or aval.shape[-1] != 2:
            raise NumbaxTypeError(
                f"{api}: {arg} has shape {aval.shape} and dtype {aval.dtype}, expected a PRNG "
                "key (uint32 data whose last axis has size 2, e.g. uint32[2]). Create one with "
                "numbax.random.key(seed) or numbax.random.PRNGKey(seed)."
            )
        data, typed = key, False
    shape = tuple(get_aval(data).shape[:-1])
    if shape and not allow_batched:
        raise NumbaxValueError(
            f"{api}: {arg} has key shape {shape}, expected a single key (shape ()). Use "
            "numbax.vmap to draw with a batch of keys."
        )
    return data, typed


def canonicalize_shape(api: str, shape: Any, arg: str = "shape") -> tuple[int, ...]:
    """A tuple of non-negative Python ints, or an error that names the argument."""
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise NumbaxTypeError(
            f"{api}: {arg} has value {shape!r}, expected a tuple of non-negative ints. "
            f"Pass e.g. {arg}=(3,) for a vector."
        )
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError as err:
        raise NumbaxTypeError(
            f"{api}: {arg} has value {shape!r}, expected a tuple of non-negative ints "
            "(concrete, not traced). Mark it static under jit."
        ) from err
    if any(d < 0 for d in out):
        raise NumbaxValueError(
            f"{api}: {arg} has value {out}, expected non-negative sizes."
        )
    return out


def default_uint_dtype() -> np.dtype:
    return dtypes.canonicalize_dtype(np.uint64)
