"""numbax.random's key API: seeds, typed and raw keys, split, fold_in, key_data and friends.

Keys are threefry2x32 keys as in JAX (prng.py holds the hash): a raw key is uint32[..., 2], a
typed key a `PRNGKeyArray` over such data. Every function accepts both and returns keys of the
kind it was given.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import jnp, prng
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxOverflowError, NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.prng import PRNGKeyArray, canonicalize_shape, check_key

# ----------------------------------------------------------------------------- keys

_IMPL = "threefry2x32"


def _return_key(data: Any, typed: bool) -> Any:
    return PRNGKeyArray(data) if typed else data


def _resolve_impl(api: str, impl: Any, dtype: Any = None) -> None:
    """Only threefry2x32 exists here; JAX's other PRNGs are refused by name."""
    if dtype is not None:
        if impl is not None:
            raise NumbaxValueError(
                f"{api}: both impl and dtype are given, expected one of them (they name the "
                "same thing)."
            )
        impl = dtype
    if isinstance(impl, PRNGSpec):
        impl = str(impl)
    if impl is None or impl == _IMPL or isinstance(impl, prng.KeyTy):
        return
    if isinstance(impl, str):
        raise NumbaxValueError(
            f"{api}: impl is {impl!r}, expected 'threefry2x32'. Unlike JAX, numbax has only "
            "the threefry2x32 PRNG (JAX's default)."
        )
    raise NumbaxTypeError(
        f"{api}: impl has type {type(impl).__name__}, expected a PRNG implementation name such "
        "as 'threefry2x32' or a key dtype from numbax.random.key_dtype()."
    )


def _seed_data(api: str, seed: Any) -> Any:
    if isinstance(seed, PRNGKeyArray):
        raise NumbaxTypeError(
            f"{api}: seed is a PRNG key, expected an integer scalar seed. Use the key itself."
        )
    if not isinstance(seed, (int, np.integer)):
        aval = get_aval(seed)
        if aval.ndim or kind_of(aval.dtype) not in "iu":
            raise NumbaxTypeError(
                f"{api}: seed has shape {aval.shape} and dtype {aval.dtype}, expected an "
                "integer scalar. Use numbax.vmap to make a batch of keys from seeds."
            )
    return jnp.asarray(prng.seed_to_key_data(seed, api))


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:
    """A raw (legacy) threefry key: uint32[2] holding the 64-bit seed as [hi, lo].

    Args:
      seed: an integer scalar; a Python int must lie in [-2**63, 2**63) (OverflowError
        otherwise, as in JAX). With jax_enable_x64 off, only its low 32 bits count.
      impl: optional PRNG name; only 'threefry2x32' exists in numbax.

    Returns:
      A uint32[2] array.

    >>> import numbax
    >>> numbax.random.PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    _resolve_impl("random.PRNGKey", impl)
    return _seed_data("random.PRNGKey", seed)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed threefry key (a `PRNGKeyArray` of shape () and dtype key<fry>) from a seed.

    Args:
      seed: an integer scalar, as for `PRNGKey`.
      impl: optional PRNG name ('threefry2x32'); deprecated in JAX in favour of `dtype`.
      dtype: optional key dtype (`key_dtype()`) or its name.

    Returns:
      A scalar key array that every numbax.random function accepts.

    >>> import numbax
    >>> numbax.random.key(0)
    Array((), dtype=key<fry>) overlaying:
    [0 0]
    """
    _resolve_impl("random.key", impl, dtype)
    return PRNGKeyArray(_seed_data("random.key", seed))


def key_data(keys: Any) -> Any:
    """The uint32[..., 2] data under a typed key array (a raw key is returned as is).

    Args:
      keys: a typed key array or a raw uint32[..., 2] key array.

    Returns:
      A uint32 array of shape keys.shape + (2,).
    """
    data, _ = check_key("random.key_data", keys, allow_batched=True, arg="keys")
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed key array over uint32[..., 2] key data (the inverse of `key_data`).

    Args:
      key_bits_array: a uint32 array whose last axis has size 2.
      impl: optional PRNG name ('threefry2x32').
      dtype: optional key dtype or its name.

    Returns:
      A key array of shape key_bits_array.shape[:-1].
    """
    _resolve_impl("random.wrap_key_data", impl, dtype)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise NumbaxTypeError(
            "random.wrap_key_data: key_bits_array is already a key array, expected its "
            "uint32 data (random.key_data(keys))."
        )
    data, _ = check_key("random.wrap_key_data", jnp.asarray(key_bits_array),
                        allow_batched=True, arg="key_bits_array")
    return PRNGKeyArray(data)


class PRNGSpec:
    """Names a PRNG implementation (what JAX's key_impl returns for unregistered ones)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"PRNGSpec({self._name!r})"

    def __str__(self) -> str:
        return self._name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PRNGSpec) and other._name == self._name

    def __hash__(self) -> int:
        return hash(self._name)


def key_impl(keys: Any) -> str:
    """The name of the PRNG implementation of a key array: always 'threefry2x32' here.

    Args:
      keys: a typed or raw key array (any key shape).

    Returns:
      The string 'threefry2x32'.
    """
    check_key("random.key_impl", keys, allow_batched=True, arg="keys")
    return _IMPL


def key_dtype(impl_spec: Any = None) -> prng.KeyTy:
    """The dtype of typed keys of a PRNG implementation (prints as key<fry>).

    Args:
      impl_spec: None or 'threefry2x32' (the only PRNG numbax has), or a key dtype.

    Returns:
      The key dtype, equal to ``numbax.random.key(0).dtype``.
    """
    _resolve_impl("random.key_dtype", impl_spec)
    return prng.KEY_DTYPE


def clone(key: Any) -> Any:
    """A copy of a key for deliberate reuse; outside key-reuse checking it changes nothing.

    Args:
      key: a typed or raw key array.

    Returns:
      An equal key array of the same kind.
    """
    data, typed = check_key("random.clone", key, allow_batched=True)
    return _return_key(data, typed)


def split(key: Any, num: int | tuple[int, ...] = 2) -> Any:
    """`num` new keys (a leading axis, or the shape `num`) derived from one key.

    Args:
      key: a single typed or raw key.
      num: a non-negative int or a tuple of them: the shape of the new key array.

    Returns:
      Keys of the same kind as `key`, with key shape `num` (or (num,)).
    """
    data, typed = check_key("random.split", key)
    shape = canonicalize_shape("random.split", num if isinstance(num, Sequence) else (num,),
                               "num")
    return _return_key(prng.split_data(data, shape), typed)


def fold_in(key: Any, data: Any) -> Any:
    """A new key that is a deterministic function of `key` and the 32-bit integer `data`.

    Args:
      key: a single typed or raw key.
      data: a scalar converted to uint32; a Python int must lie in [0, 2**32)
        (OverflowError otherwise, as in JAX), a numpy integer wraps.

    Returns:
      A key of the same kind as `key`.
    """
    kdata, typed = check_key("random.fold_in", key)
    if isinstance(data, int):
        if not 0 <= data < 2 ** 32:
            raise NumbaxOverflowError(
                f"random.fold_in: data is {data}, expected an integer in [0, 2**32) (it is "
                "folded in as a uint32). Reduce it first, e.g. data % 2**32."
            )
        word = np.uint32(data)
    elif isinstance(data, np.integer):
        word = np.uint32(int(data) & 0xFFFFFFFF)
    else:
        aval = get_aval(data)
        if aval.ndim or kind_of(aval.dtype) not in "biuf":
            raise NumbaxTypeError(
                f"random.fold_in: data has shape {aval.shape} and dtype {aval.dtype}, expected "
                "an integer scalar. Use numbax.vmap for a batch."
            )
        word = ew.convert_element_type(data, np.uint32)
    return _return_key(prng.fold_in_data(kdata, word), typed)


def _split_raw(data: Any, num: int = 2) -> list[Any]:
    keys = prng.split_data(data, (num,))
    return [shape_ops.reshape(shape_ops.slice(keys, (i, 0), (i + 1, 2)), (2,))
            for i in range(num)]
