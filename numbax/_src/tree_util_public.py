"""The user-facing pytree functions of numbax.tree_util and numbax.tree, where a typed PRNG key
array is one leaf, as in JAX.

numbax registers PRNGKeyArray as a pytree node over its uint32 words so that its transforms
(jit, vmap, grad, scan, ...) trace the words; the internal functions of `_src.tree_util` keep
that. What users see through jax.tree_util is JAX's view: `tree_leaves(key(0))` is
`[key(0)]` and `tree_structure(split(k))` is `PyTreeDef(*)`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numbax._src import tree_util as _tu
from numbax._src.lax.key_arrays import KeyArrayBase


def _keys_are_leaves(is_leaf: Callable | None, takes_path: bool = False) -> Callable:
    """`is_leaf` extended with "a key array is a leaf" (of (path, x) when takes_path)."""
    if takes_path:
        def pred(path: Any, x: Any) -> bool:
            return isinstance(x, KeyArrayBase) or bool(is_leaf is not None and is_leaf(path, x))
    else:
        def pred(x: Any) -> bool:
            return isinstance(x, KeyArrayBase) or bool(is_leaf is not None and is_leaf(x))
    return pred


def _public(fn: Callable) -> Callable:
    """fn with its `is_leaf` keyword (or 2nd positional) argument extended to key arrays."""
    @functools.wraps(fn)
    def wrapper(*args: Any, is_leaf: Callable | None = None, **kwargs: Any) -> Any:
        takes_path = bool(kwargs.get("is_leaf_takes_path", False))
        return fn(*args, is_leaf=_keys_are_leaves(is_leaf, takes_path), **kwargs)
    return wrapper


def _positional_is_leaf(fn: Callable) -> Callable:
    """For functions whose `is_leaf` may come positionally after one tree: fn(tree, is_leaf)."""
    @functools.wraps(fn)
    def wrapper(tree: Any, is_leaf: Callable | None = None, *args: Any, **kwargs: Any) -> Any:
        takes_path = bool(kwargs.get("is_leaf_takes_path", args[0] if args else False))
        return fn(tree, _keys_are_leaves(is_leaf, takes_path), *args, **kwargs)
    return wrapper


tree_flatten = _positional_is_leaf(_tu.tree_flatten)
tree_leaves = _positional_is_leaf(_tu.tree_leaves)
tree_structure = _positional_is_leaf(_tu.tree_structure)
tree_flatten_with_path = _positional_is_leaf(_tu.tree_flatten_with_path)
tree_leaves_with_path = _positional_is_leaf(_tu.tree_leaves_with_path)
tree_map = _public(_tu.tree_map)
tree_map_with_path = _public(_tu.tree_map_with_path)
tree_all = _public(_tu.tree_all)
tree_reduce_associative = _public(_tu.tree_reduce_associative)


@functools.wraps(_tu.tree_reduce)
def tree_reduce(function: Callable, tree: Any, initializer: Any = _tu._UNSPECIFIED,
                is_leaf: Callable | None = None) -> Any:
    return _tu.tree_reduce(function, tree, initializer, is_leaf=_keys_are_leaves(is_leaf))


@functools.wraps(_tu.tree_broadcast)
def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable | None = None) -> Any:
    return _tu.tree_broadcast(prefix_tree, full_tree, _keys_are_leaves(is_leaf))


@functools.wraps(_tu.all_leaves)
def all_leaves(iterable: Any, is_leaf: Callable | None = None) -> bool:
    return _tu.all_leaves(iterable, _keys_are_leaves(is_leaf))
