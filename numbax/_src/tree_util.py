"""Pytrees: nested containers flattened to leaves and a hashable structure (PyTreeDef)."""
from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NamedTuple


class _NodeType(NamedTuple):
    to_iterable: Callable[[Any], tuple[Iterable, Hashable]]
    from_iterable: Callable[[Hashable, Iterable], Any]


_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
    """Registers `nodetype` as a container: flatten_func(x) -> (children, aux_data)."""
    if nodetype in _registry:
        raise ValueError(f"register_pytree_node: {nodetype.__name__} is already registered.")
    _registry[nodetype] = _NodeType(flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: uses cls.tree_flatten and cls.tree_unflatten (a classmethod)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    return register_pytree_node_class(cls)


def _dict_flatten(d: dict) -> tuple[list, tuple]:
    keys = _sorted_keys(d)
    return [d[k] for k in keys], tuple(keys)


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:  # mixed key types: JAX sorts by (type name, value)
        return sorted(d, key=lambda k: (type(k).__name__, k))


register_pytree_node(tuple, lambda t: (t, None), lambda _, xs: tuple(xs))
register_pytree_node(list, lambda t: (t, None), lambda _, xs: list(xs))
register_pytree_node(dict, _dict_flatten, lambda keys, xs: dict(zip(keys, xs, strict=True)))
register_pytree_node(
    collections.OrderedDict,
    lambda d: (list(d.values()), tuple(d.keys())),
    lambda keys, xs: collections.OrderedDict(zip(keys, xs, strict=True)),
)
register_pytree_node(type(None), lambda _: ((), None), lambda _, __: None)


def _defaultdict_flatten(d):
    values, keys = _dict_flatten(d)
    return values, (d.default_factory, keys)


register_pytree_node(
    collections.defaultdict,
    _defaultdict_flatten,
    lambda aux, xs: collections.defaultdict(aux[0], zip(aux[1], xs, strict=True)),
)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node_type(x: Any) -> tuple[Any, _NodeType | None]:
    t = type(x)
    node = _registry.get(t)
    if node is not None:
        return t, node
    if _is_namedtuple(x):
        return t, _NodeType(lambda nt: (tuple(nt), None), lambda _, xs, t=t: t(*xs))
    return t, None


class PyTreeDef:
    """The structure of a pytree: hashable, comparable, able to rebuild the tree from leaves."""

    __slots__ = ("node_type", "node_data", "children", "num_leaves", "_hash")

    def __init__(self, node_type, node_data, children: tuple[PyTreeDef, ...]) -> None:
        self.node_type = node_type
        self.node_data = node_data
        self.children = children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = None

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def _key(self):
        return (self.node_type, self.node_data, self.children)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PyTreeDef) and self._key() == other._key()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    def unflatten(self, leaves: Iterable) -> Any:
        return tree_unflatten(self, leaves)

    def __repr__(self) -> str:
        return f"PyTreeDef({self._pp()})"

    def _pp(self) -> str:
        if self.node_type is None:
            return "*"
        kids = [c._pp() for c in self.children]
        if self.node_type is tuple:
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if self.node_type is list:
            return "[" + ", ".join(kids) + "]"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.node_data, kids)) + "}"
        if self.node_type is type(None):
            return "None"
        return f"{self.node_type.__name__}[{self.node_data}]({', '.join(kids)})"


_LEAF = PyTreeDef(None, None, ())


def _flatten(x: Any, is_leaf: Callable | None, leaves: list) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    node_type, node = _node_type(x)
    if node is None:
        leaves.append(x)
        return _LEAF
    children, aux = node.to_iterable(x)
    child_defs = tuple(_flatten(c, is_leaf, leaves) for c in children)
    return PyTreeDef(node_type, aux, child_defs)


def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple[list, PyTreeDef]:
    leaves: list = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable) -> Any:
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree_unflatten: got {len(leaves)} leaves for a structure with "
            f"{treedef.num_leaves} leaves: {treedef}"
        )
    it = iter(leaves)
    return _build(treedef, it)


def _build(treedef: PyTreeDef, it) -> Any:
    if treedef.node_type is None:
        return next(it)
    children = [_build(c, it) for c in treedef.children]
    node_type = treedef.node_type
    node = _registry.get(node_type)
    if node is None:  # a namedtuple
        return node_type(*children)
    return node.from_iterable(treedef.node_data, children)


def tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.node_type is None


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """Applies f to the leaves of `tree` and the matching leaves of each tree in `rest`."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    all_leaves = [leaves]
    for i, other in enumerate(rest):
        other_leaves = flatten_up_to(treedef, other, f"tree_map: tree {i + 1}")
        all_leaves.append(other_leaves)
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves, strict=True))


def flatten_up_to(treedef: PyTreeDef, tree: Any, what: str) -> list:
    """Flattens `tree` to the leaves of `treedef`, where `treedef` may be a prefix of it."""
    out: list = []
    _flatten_up_to(treedef, tree, out, what)
    return out


def _flatten_up_to(treedef: PyTreeDef, tree: Any, out: list, what: str) -> None:
    if treedef.node_type is None:
        out.append(tree)
        return
    node_type, node = _node_type(tree)
    if node_type is not treedef.node_type:
        raise ValueError(
            f"{what} has a {node_type.__name__} where the structure {treedef} expects a "
            f"{treedef.node_type.__name__}."
        )
    children, aux = node.to_iterable(tree)
    children = list(children)
    if aux != treedef.node_data or len(children) != len(treedef.children):
        raise ValueError(
            f"{what} does not match the structure {treedef}: node data {aux!r} vs "
            f"{treedef.node_data!r}."
        )
    for child, child_def in zip(children, treedef.children, strict=True):
        _flatten_up_to(child_def, child, out, what)


def tree_all(tree: Any) -> bool:
    return all(tree_leaves(tree))


def tree_reduce(function: Callable, tree: Any, *initializer: Any) -> Any:
    return functools.reduce(function, tree_leaves(tree), *initializer)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef, pytree: Any) -> Any:
    flat = flatten_up_to(outer_treedef, pytree, "tree_transpose")
    inner = [flatten_up_to(inner_treedef, x, "tree_transpose") for x in flat]
    transposed = [outer_treedef.unflatten(col) for col in zip(*inner, strict=True)]
    return inner_treedef.unflatten(transposed)


def all_leaves(iterable: Iterable) -> bool:
    return all(treedef_is_leaf(tree_structure(x)) for x in iterable)


class Partial:
    """functools.partial as a pytree: the bound arguments are leaves (for passing to jit)."""

    def __init__(self, func: Callable, *args: Any, **kwargs: Any) -> None:
        self.func, self.args, self.keywords = func, args, kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*self.args, *args, **{**self.keywords, **kwargs})


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)
