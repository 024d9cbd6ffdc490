"""Pytrees: jax.tree_util's functions over the registry and PyTreeDef of `pytree`.

Nested tuples, lists, dicts, None, namedtuples and registered classes are nodes; everything else
is a leaf. Flattening is iterative, so trees of any depth work.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from numbax._src.pytree import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    PyTreeDef,
    PyTreeRegistry,
    SequenceKey,
    default_registry,
    flatten_up_to,
    make_node,
)
from numbax._src.tree_registration import (
    Partial,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
    static_field,
)

T = TypeVar("T")
KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial", "PyTreeDef",
    "PyTreeRegistry", "SequenceKey", "all_leaves", "default_registry", "flatten_one_level",
    "flatten_one_level_with_keys", "flatten_up_to", "is_tree_node", "keystr",
    "register_dataclass", "register_pytree_node", "register_pytree_node_class",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static",
    "static_field", "tree_all", "tree_broadcast", "tree_flatten", "tree_flatten_with_path",
    "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path", "tree_reduce",
    "tree_reduce_associative", "tree_structure", "tree_transpose", "tree_unflatten",
    "treedef_children", "treedef_is_leaf", "treedef_tuple",
]


class _Unspecified:
    """The default of optional arguments where None is a valid value."""

    def __repr__(self) -> str:
        return "<unspecified>"


_UNSPECIFIED: Any = _Unspecified()

# ----------------------------------------------------------------------------- flattening


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None,
                 ) -> tuple[list, PyTreeDef]:
    """Flattens a pytree into its leaves (left to right, depth first) and its structure.

    Args:
      tree: the pytree.
      is_leaf: optional predicate; a subtree for which it returns True is one leaf.

    Returns:
      (leaves, treedef).

    >>> import numbax
    >>> numbax.tree.flatten([1, (2, 3), [4, 5]])
    ([1, 2, 3, 4, 5], PyTreeDef([*, (*, *), [*, *]]))
    """
    return default_registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable) -> Any:
    """Rebuilds the pytree of structure `treedef` holding `leaves` (the inverse of flatten).

    >>> import numbax
    >>> _, treedef = numbax.tree.flatten([1, (2, 3)])
    >>> numbax.tree.unflatten(treedef, [10, 20, 30])
    [10, (20, 30)]
    """
    _check_treedef("tree_unflatten", treedef)
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of a pytree, left to right.

    >>> import numbax
    >>> numbax.tree.leaves({"b": [1, 2], "a": None, "c": 3})
    [1, 2, 3]
    """
    return default_registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure (PyTreeDef) of a pytree.

    >>> import numbax
    >>> numbax.tree.structure({"a": 1, "b": (2, None)})
    PyTreeDef({'a': *, 'b': (*, None)})
    """
    return default_registry.flatten(tree, is_leaf)[1]


def _check_treedef(api: str, treedef: Any) -> None:
    if not isinstance(treedef, PyTreeDef):
        raise TypeError(f"{api}: treedef is a {type(treedef).__name__}, expected a PyTreeDef "
                        "(from tree_structure or tree_flatten).")


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True when the structure has one node (a leaf, or None, or an empty container)."""
    _check_treedef("treedef_is_leaf", treedef)
    return treedef.num_nodes == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the root's children.

    >>> import numbax
    >>> numbax.tree_util.treedef_children(numbax.tree.structure([(1, 2), 3]))
    [PyTreeDef((*, *)), PyTreeDef(*)]
    """
    _check_treedef("treedef_children", treedef)
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have the given structures.

    >>> import numbax
    >>> numbax.tree_util.treedef_tuple([numbax.tree.structure([1]), numbax.tree.structure(2)])
    PyTreeDef(([*], *))
    """
    treedefs = list(treedefs)
    for i, td in enumerate(treedefs):
        _check_treedef(f"treedef_tuple: entry {i}", td)
    return make_node(default_registry, tuple, None, treedefs)


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when every element of `iterable` is a leaf (not a pytree node, and not None)."""
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves, strict=True))


def is_tree_node(typ: type) -> bool:
    """True when `typ` is a pytree node type (built in, registered, or a namedtuple)."""
    if not isinstance(typ, type):
        raise TypeError(f"is_tree_node: typ is a {type(typ).__name__}, expected a type.")
    return default_registry.is_node(typ)


def flatten_one_level(tree: Any) -> tuple[Iterable, Hashable]:
    """(children, aux data) of a pytree node; ValueError for a leaf.

    >>> import numbax
    >>> numbax.tree_util.flatten_one_level({"a": [1, 2], "b": 3})
    (([1, 2], 3), ('a', 'b'))
    """
    out = default_registry.flatten_one_level(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[KeyEntry, Any]], Hashable]:
    """((key, child) pairs, aux data) of a pytree node; ValueError for a leaf."""
    out = default_registry.flatten_one_level_with_keys(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


# ----------------------------------------------------------------------------- mapping


def _rest_leaves(api: str, treedef: PyTreeDef, rest: Sequence[Any]) -> list[list]:
    return [flatten_up_to(treedef, r, f"{api}: rest[{i}]") for i, r in enumerate(rest)]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Applies `f` leafwise: f(leaf of tree, matching subtrees of each of rest).

    Args:
      f: a function of 1 + len(rest) arguments.
      tree: the pytree giving the structure of the result.
      *rest: pytrees with `tree`'s structure, or with it as a prefix.
      is_leaf: optional predicate marking subtrees of `tree` as leaves.

    Returns:
      A pytree of `tree`'s structure.

    >>> import numbax
    >>> numbax.tree.map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]])
    [[5, 7, 9], [6, 1, 2]]
    """
    leaves, treedef = default_registry.flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = _rest_leaves("tree_map", treedef, rest)
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others, strict=True)])


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False,
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like tree_flatten, with each leaf paired with its key path.

    Args:
      tree: the pytree.
      is_leaf: optional predicate, is_leaf(x), or is_leaf(path, x) with is_leaf_takes_path.
      is_leaf_takes_path: whether is_leaf takes the key path too.

    Returns:
      ([(key path, leaf), ...], treedef).

    >>> import numbax
    >>> numbax.tree.flatten_with_path([1, {"x": 3}])[0]
    [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='x')), 3)]
    """
    pred = is_leaf
    if is_leaf is not None and not is_leaf_takes_path:
        def pred(_, x):
            return is_leaf(x)
    return default_registry.flatten_with_path(tree, pred)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """The (key path, leaf) pairs of a pytree, left to right.

    >>> import numbax
    >>> [numbax.tree_util.keystr(p) for p, _ in numbax.tree.leaves_with_path({"a": [1, 2]})]
    ["['a'][0]", "['a'][1]"]
    """
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like tree_map, with each leaf's key path as the first argument of `f`.

    >>> import numbax
    >>> numbax.tree.map_with_path(lambda path, x: x + path[0].idx, [1, 2, 3])
    [1, 3, 5]
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = _rest_leaves("tree_map_with_path", treedef, rest)
    return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others, strict=True)])


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Repeats each leaf of `prefix_tree` over the matching subtree of `full_tree`.

    >>> import numbax
    >>> numbax.tree.broadcast((1, 2, 3), (0, {"a": 0, "b": 0}, (0, 0)))
    (1, {'a': 2, 'b': 2}, (3, 3))
    """
    full_def = tree_structure(full_tree)
    out = broadcast_prefix_leaves(prefix_tree, full_def, is_leaf)
    if out is None:  # not a prefix: say where
        flatten_up_to(tree_structure(prefix_tree, is_leaf), full_tree, "tree_broadcast: full_tree")
    return full_def.unflatten(out)


def broadcast_prefix_leaves(prefix_tree: Any, full_def: PyTreeDef,
                            is_leaf: Callable[[Any], bool] | None = None) -> list | None:
    """The leaves of `prefix_tree` repeated over the leaves of `full_def`, or None when
    `prefix_tree` is not a prefix of it. Works on the structure alone: no user node is ever
    rebuilt (so a custom unflatten never sees placeholder leaves)."""
    registry = full_def._registry
    out: list = []
    stack = [prefix_tree]
    nodes = full_def._nodes
    i = len(nodes) - 1  # reversed post-order: the root first, then children right to left
    while i >= 0:
        t, aux, arity, n_leaves, n_nodes = nodes[i]
        x = stack.pop()
        entry = None if is_leaf is not None and is_leaf(x) else registry.entry(type(x))
        if entry is None:  # a prefix leaf covers this whole subtree
            out.extend([x] * n_leaves)
            i -= n_nodes
            continue
        if type(x) is not t:
            return None
        children, x_aux = entry.flatten(x)
        children = list(children)
        if len(children) != arity or not (x_aux is aux or _eq(x_aux, aux)):
            return None
        stack.extend(children)
        i -= 1
    out.reverse()
    return out


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


# ----------------------------------------------------------------------------- reductions


def tree_reduce(function: Callable[[T, Any], T], tree: Any,
                initializer: Any = _UNSPECIFIED,
                is_leaf: Callable[[Any], bool] | None = None) -> T:
    """functools.reduce over the leaves of a pytree.

    >>> import numbax, operator
    >>> numbax.tree.reduce(operator.add, [1, (2, 3), [4, 5, 6]])
    21
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = _UNSPECIFIED,
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
    """Reduces the leaves with an associative operation as a balanced tree (log depth).

    Args:
      operation: an associative binary function.
      tree: the pytree.
      identity: the result for a tree with no leaves (required then).
      is_leaf: optional leaf predicate.

    >>> import numbax
    >>> numbax.tree.reduce_associative(lambda a, b: (a, b), [1, 2, 3, 4])
    ((1, 2), (3, 4))
    """
    level = tree_leaves(tree, is_leaf)
    if not level:
        if identity is _UNSPECIFIED:
            raise TypeError("tree_reduce_associative: the tree has no leaves; pass identity= "
                            "to reduce an empty tree.")
        return identity
    return _balanced(operation, level, 0, len(level))


def _balanced(operation: Callable, xs: list, lo: int, hi: int) -> Any:
    """Reduces xs[lo:hi] halving iteratively (no recursion deeper than log2 of the size)."""
    stack: list = [(lo, hi, False)]
    results: list = []
    while stack:
        lo, hi, combine = stack.pop()
        if combine:
            b = results.pop()
            a = results.pop()
            results.append(operation(a, b))
        elif hi - lo == 1:
            results.append(xs[lo])
        else:
            mid = lo + (hi - lo) // 2
            stack.append((lo, hi, True))
            stack.append((mid, hi, False))
            stack.append((lo, mid, False))
    return results[0]


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """all() over the leaves.

    >>> import numbax
    >>> numbax.tree.all([True, {"a": True, "b": (True, False)}])
    False
    """
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turns a tree of structure (outer of inner) into one of structure (inner of outer).

    Args:
      outer_treedef: the outer structure.
      inner_treedef: the inner structure; None infers it from the first outer leaf.
      pytree_to_transpose: the tree to transpose.

    >>> import numbax
    >>> outer = numbax.tree.structure([0, 0])
    >>> numbax.tree.transpose(outer, None, [(1, 2, 3), (4, 5, 6)])
    ([1, 4], [2, 5], [3, 6])
    """
    _check_treedef("tree_transpose: outer_treedef", outer_treedef)
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        firsts = flatten_up_to(outer_treedef, pytree_to_transpose, "tree_transpose: pytree")
        if not firsts:
            raise ValueError("tree_transpose: outer_treedef has no leaves, so the inner "
                             "structure cannot be inferred; pass inner_treedef.")
        inner_treedef = tree_structure(firsts[0])
    _check_treedef("tree_transpose: inner_treedef", inner_treedef)
    n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: pytree_to_transpose has structure {treedef}, "
                        f"expected {expected} (outer_treedef composed with inner_treedef).")
    rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    columns = [outer_treedef.unflatten(col) for col in zip(*rows, strict=True)]
    if not rows:
        columns = [outer_treedef.unflatten([]) for _ in range(n_in)]
    return inner_treedef.unflatten(columns)


# ----------------------------------------------------------------------------- key paths


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Prints a key path: ``['a'][0].b``, or with simple=True ``a0b`` (here with
    separator="/": ``a/0/b``).

    Args:
      keys: a tuple of key entries (or any objects with a str form).
      simple: print only each entry's key, index or name.
      separator: the text between entries.

    >>> import numbax
    >>> from numbax.tree_util import DictKey, SequenceKey, GetAttrKey, keystr
    >>> keystr((DictKey("a"), SequenceKey(0), GetAttrKey("b")))
    "['a'][0].b"
    >>> keystr((DictKey("a"), SequenceKey(0), GetAttrKey("b")), simple=True, separator="/")
    'a/0/b'
    """
    if not isinstance(keys, tuple):
        raise TypeError(f"keystr: keys is a {type(keys).__name__}, expected a tuple of key "
                        "entries (a key path).")
    return separator.join(map(_simple_entrystr if simple else str, keys))


def _simple_entrystr(key: Any) -> str:
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, (DictKey, FlattenedIndexKey)):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return str(key.name)
    return str(key)
