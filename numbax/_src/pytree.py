"""The pytree engine: the node registry, PyTreeDef and (un)flattening, all iterative.

A PyTreeDef is a flat tuple of node records in post-order, as jaxlib's C++ PyTreeDef is a vector
of nodes, so flattening, unflattening, comparing, hashing and printing never recurse in Python:
a pytree of any depth works (a 100,000-deep nest costs time, not a RecursionError).
"""
from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NamedTuple

# ----------------------------------------------------------------------------- key entries


@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """The key of a tuple or list child: its index. Prints as ``[0]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """The key of a dict child. Prints as ``['a']``."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """The key of a namedtuple or dataclass field (an attribute). Prints as ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """The key of a child of a custom node registered without keys: its position among the
    node's children. Prints as ``[<flat index 0>]``."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


# ----------------------------------------------------------------------------- the registry


class _Entry(NamedTuple):
    flatten: Callable[[Any], tuple[Iterable, Any]]  # node -> (children, aux_data)
    unflatten: Callable[[Any, list], Any]  # (aux_data, children) -> node
    flatten_with_keys: Callable[[Any], tuple[Iterable, Any]]  # node -> ((key, child)..., aux)


def _seq_keys(flatten: Callable) -> Callable:
    def with_keys(x):
        children, aux = flatten(x)
        return [(SequenceKey(i), c) for i, c in enumerate(children)], aux

    return with_keys


def _index_keys(flatten: Callable) -> Callable:
    def with_keys(x):
        children, aux = flatten(x)
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux

    return with_keys


def _without_keys(flatten_with_keys: Callable) -> Callable:
    def flatten(x):
        pairs, aux = flatten_with_keys(x)
        return [c for _, c in pairs], aux

    return flatten


def sorted_keys(d: dict) -> tuple:
    """A dict's keys in pytree order: sorted. Keys that do not compare (such as {1: .., 'y': ..})
    raise JAX's ValueError."""
    try:
        return tuple(sorted(d))
    except TypeError as e:
        from numbax._src.errors import NumbaxValueError

        raise NumbaxValueError(
            "Comparator raised exception while sorting pytree dictionary keys. The keys "
            f"{list(d)!r} do not compare with each other ({e}); use keys of one type (e.g. all "
            "str), or an OrderedDict, whose keys keep insertion order.") from e


def _dict_flatten(d: dict) -> tuple[tuple, tuple]:
    keys = sorted_keys(d)
    return tuple(d[k] for k in keys), keys


def _dict_flatten_with_keys(d: dict) -> tuple[list, tuple]:
    keys = sorted_keys(d)
    return [(DictKey(k), d[k]) for k in keys], keys


def _ordered_dict_flatten_with_keys(d: collections.OrderedDict) -> tuple[list, tuple]:
    return [(DictKey(k), v) for k, v in d.items()], tuple(d)


def _defaultdict_flatten_with_keys(d: collections.defaultdict) -> tuple[list, tuple]:
    try:
        keys = tuple(sorted(d))
    except TypeError as e:  # JAX's defaultdict flatten sorts in Python: a TypeError
        from numbax._src.errors import NumbaxTypeError

        raise NumbaxTypeError(f"defaultdict keys {list(d)!r} do not compare with each other "
                              f"({e}); use keys of one type to flatten it as a pytree.") from e
    return [(DictKey(k), d[k]) for k in keys], (d.default_factory, keys)


def _namedtuple_entry(t: type) -> _Entry:
    def with_keys(x):
        return [(GetAttrKey(f), v) for f, v in zip(t._fields, x, strict=True)], t

    return _Entry(lambda x: (list(x), t), lambda _, xs: t(*xs), with_keys)


def _is_namedtuple_type(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields")


class PyTreeRegistry:
    """The types that are pytree nodes and how each flattens (jax.tree_util.default_registry)."""

    def __init__(self) -> None:
        self._entries: dict[type, _Entry] = {}
        self._namedtuples: dict[type, _Entry] = {}  # cache: namedtuple classes seen so far

    def register_node(self, nodetype: type, flatten_func: Callable | None,
                      unflatten_func: Callable, flatten_with_keys_func: Callable | None = None,
                      ) -> None:
        """Registers `nodetype`; at least one of the two flatten functions must be given."""
        if nodetype in self._entries:
            raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
        if flatten_func is None:
            flatten_func = _without_keys(flatten_with_keys_func)
        if flatten_with_keys_func is None:
            flatten_with_keys_func = _index_keys(flatten_func)
        self._entries[nodetype] = _Entry(flatten_func, unflatten_func, flatten_with_keys_func)

    def register_dataclass_node(self, nodetype: type, data_fields: list[str],
                                meta_fields: list[str]) -> None:
        """Registers a dataclass-like type: data fields are children, meta fields aux data."""
        data, meta = tuple(data_fields), tuple(meta_fields)

        def flatten(x):
            return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

        def flatten_with_keys(x):
            return ([(GetAttrKey(n), getattr(x, n)) for n in data],
                    tuple(getattr(x, n) for n in meta))

        def unflatten(aux, children):
            return nodetype(**dict(zip(meta, aux, strict=True)),
                            **dict(zip(data, children, strict=True)))

        self.register_node(nodetype, flatten, unflatten, flatten_with_keys)

    def entry(self, t: type) -> _Entry | None:
        """The registry entry of type `t` (namedtuples included), or None for a leaf type."""
        entry = self._entries.get(t)
        if entry is None and issubclass(t, tuple):
            entry = self._namedtuples.get(t)
            if entry is None and _is_namedtuple_type(t):
                entry = self._namedtuples[t] = _namedtuple_entry(t)
        return entry

    def is_node(self, typ: type) -> bool:
        return self.entry(typ) is not None

    def flatten(self, tree: Any, is_leaf: Callable[[Any], bool] | None = None,
                ) -> tuple[list, PyTreeDef]:
        return _flatten(self, tree, is_leaf)

    def flatten_with_path(self, tree: Any, is_leaf: Callable[[Any, Any], bool] | None = None,
                          ) -> tuple[list, PyTreeDef]:
        """Like flatten, with each leaf paired with its key path; is_leaf(path, x)."""
        return _flatten_with_path(self, tree, is_leaf)

    def flatten_one_level(self, tree: Any) -> tuple[Iterable, Any] | None:
        entry = self.entry(type(tree))
        return None if entry is None else entry.flatten(tree)

    def flatten_one_level_with_keys(self, tree: Any) -> tuple[Iterable, Any] | None:
        entry = self.entry(type(tree))
        return None if entry is None else entry.flatten_with_keys(tree)


default_registry = PyTreeRegistry()
default_registry.register_node(type(None), lambda _: ((), None), lambda _, __: None,
                               lambda _: ((), None))
_tuple_flatten = (lambda t: (t, None))
default_registry.register_node(tuple, _tuple_flatten, lambda _, xs: tuple(xs),
                               _seq_keys(_tuple_flatten))
default_registry.register_node(list, _tuple_flatten, lambda _, xs: list(xs),
                               _seq_keys(_tuple_flatten))
default_registry.register_node(dict, _dict_flatten,
                               lambda keys, xs: dict(zip(keys, xs, strict=True)),
                               _dict_flatten_with_keys)
default_registry.register_node(
    collections.OrderedDict, None,
    lambda keys, xs: collections.OrderedDict(zip(keys, xs, strict=True)),
    _ordered_dict_flatten_with_keys)
default_registry.register_node(
    collections.defaultdict, None,
    lambda aux, xs: collections.defaultdict(aux[0], zip(aux[1], xs, strict=True)),
    _defaultdict_flatten_with_keys)

# ----------------------------------------------------------------------------- PyTreeDef

# A node record: (node type or None for a leaf, aux data, arity, num_leaves, num_nodes).
_LEAF = (None, None, 0, 1, 1)


class _Children(tuple):
    """A PyTreeDef's child treedefs: JAX's `children()` method, and iterable like a tuple."""

    def __call__(self) -> list[PyTreeDef]:
        return list(self)


class PyTreeDef:
    """The structure of a pytree: comparable by value, hashable, able to rebuild the tree.

    Two treedefs are equal when their node types, arities and aux data are equal (aux data are
    compared with ==, so they need not be hashable; unhashable aux data take no part in the
    hash)."""

    __slots__ = ("_nodes", "_hash", "_registry")

    def __init__(self, nodes: tuple, registry: PyTreeRegistry = default_registry) -> None:
        self._nodes = nodes
        self._hash: int | None = None
        self._registry = registry

    @property
    def num_leaves(self) -> int:
        return self._nodes[-1][3]

    @property
    def num_nodes(self) -> int:
        return len(self._nodes)

    @property
    def node_type(self) -> type | None:
        """The type of the root node, None for a leaf (numbax's own; JAX has node_data())."""
        return self._nodes[-1][0]

    def node_data(self) -> tuple[type, Any] | None:
        """(type, aux data) of the root node, or None for a leaf."""
        t, aux = self._nodes[-1][:2]
        if t is None:
            return None
        if t is dict:
            return (dict, list(aux))
        if _is_namedtuple_type(t) and self._registry._entries.get(t) is None:
            return (t, None)
        return (t, aux)

    @property
    def children(self) -> _Children:
        """The child treedefs of the root, in order (call it, as in JAX: `children()`)."""
        nodes = self._nodes
        out = []
        end = len(nodes) - 1  # one past the last child's root
        for _ in range(nodes[-1][2]):
            start = end - nodes[end - 1][4]
            out.append(PyTreeDef(nodes[start:end], self._registry))
            end = start
        return _Children(reversed(out))

    def unflatten(self, leaves: Iterable) -> Any:
        """The pytree of this structure holding `leaves` (the inverse of flatten)."""
        leaves = leaves if isinstance(leaves, list) else list(leaves)
        n = self._nodes[-1][3]
        if len(leaves) != n:
            few = "few" if len(leaves) < n else "many"
            raise ValueError(f"tree_unflatten: too {few} leaves for the structure {self}: "
                             f"expected {n}, got {len(leaves)}.")
        return _unflatten(self._registry, self._nodes, leaves)

    def flatten_up_to(self, tree: Any) -> list:
        """The subtrees of `tree` at this structure's leaves (`self` must be a prefix of it)."""
        return flatten_up_to(self, tree, "tree")

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure with each of this structure's leaves replaced by `inner`."""
        nodes: list = []
        grow = inner.num_nodes - 1
        for t, aux, arity, n_leaves, n_nodes in self._nodes:
            if t is None:
                nodes.extend(inner._nodes)
            else:
                nodes.append((t, aux, arity, n_leaves * inner.num_leaves,
                              n_nodes + n_leaves * grow))
        return PyTreeDef(tuple(nodes), self._registry)

    def walk(self, f_node: Callable[[tuple, Any], Any], f_leaf: Callable[[Any], Any] | None,
             leaves: Iterable) -> Any:
        """Folds the tree bottom-up: f_leaf at each leaf, f_node(child results, aux) at each node.
        """
        it = iter(leaves)
        stack: list = []
        for t, aux, arity, _, _ in self._nodes:
            if t is None:
                leaf = next(it)
                stack.append(leaf if f_leaf is None else f_leaf(leaf))
                continue
            kids = tuple(stack[len(stack) - arity:])
            del stack[len(stack) - arity:]
            stack.append(f_node(kids, list(aux) if t is dict else aux))
        return stack[0]

    def from_node_data_and_children(self, registry: PyTreeRegistry | None,
                                    node_data: tuple[type, Any] | None,
                                    children: Iterable[PyTreeDef]) -> PyTreeDef:
        """A treedef with root (type, aux) = node_data over `children` (None: a leaf)."""
        registry = registry or default_registry
        if node_data is None:
            return PyTreeDef((_LEAF,), registry)
        t, aux = node_data
        if registry.entry(t) is None:
            raise ValueError(f"from_node_data_and_children: {t} is not a pytree node type.")
        return make_node(registry, t, tuple(aux) if t is dict else aux, list(children))

    def __reduce__(self) -> tuple:
        if self._registry is not default_registry:
            raise TypeError("a PyTreeDef of a custom PyTreeRegistry cannot be pickled.")
        return (PyTreeDef, (self._nodes,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return False
        if self._nodes is other._nodes:
            return True
        try:
            return self._nodes == other._nodes
        except Exception:  # aux data whose == does not give a bool (numpy arrays)
            return len(self._nodes) == len(other._nodes) and all(
                a[0] is b[0] and a[2] == b[2] and (a[1] is b[1] or _safe_eq(a[1], b[1]))
                for a, b in zip(self._nodes, other._nodes, strict=True))

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            try:
                h = hash(self._nodes)
            except TypeError:  # unhashable aux data: hash the rest
                h = hash(tuple(_hashable_record(n) for n in self._nodes))
            self._hash = h
        return h

    def __repr__(self) -> str:
        return f"PyTreeDef({self._pp()})"

    def _pp(self) -> str:
        stack: list[str] = []
        for t, aux, arity, _, _ in self._nodes:
            kids = stack[len(stack) - arity:]
            del stack[len(stack) - arity:]
            stack.append(_pp_node(t, aux, kids, self._registry))
        return stack[0]


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _hashable_record(node: tuple) -> tuple:
    try:
        hash(node)
        return node
    except TypeError:
        return (node[0], type(node[1]).__name__, node[2], node[3], node[4])


def _pp_node(t: type | None, aux: Any, kids: list[str], registry: PyTreeRegistry) -> str:
    if t is None:
        return "*"
    if t is tuple:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if t is list:
        return "[" + ", ".join(kids) + "]"
    if t is dict:
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(aux, kids, strict=True)) + "}"
    if t is type(None):
        return "None"
    if _is_namedtuple_type(t) and t not in registry._entries:
        return f"CustomNode(namedtuple[{t.__name__}], [{', '.join(kids)}])"
    return f"CustomNode({t.__name__}[{aux}], [{', '.join(kids)}])"


def make_node(registry: PyTreeRegistry, t: type, aux: Any, children: list[PyTreeDef],
              ) -> PyTreeDef:
    """The treedef of a node of type t with aux data `aux` over the child treedefs."""
    nodes: list = []
    for c in children:
        nodes.extend(c._nodes)
    n_leaves = sum(c.num_leaves for c in children)
    nodes.append((t, aux, len(children), n_leaves, len(nodes) + 1))
    return PyTreeDef(tuple(nodes), registry)


# ----------------------------------------------------------------------------- flattening


class _Emit:
    """A stack marker: all children of a node are flattened; record the node."""

    __slots__ = ("t", "aux", "arity", "leaves0", "nodes0")

    def __init__(self, t, aux, arity, leaves0, nodes0) -> None:
        self.t, self.aux, self.arity, self.leaves0, self.nodes0 = t, aux, arity, leaves0, nodes0


def _flatten(registry: PyTreeRegistry, tree: Any, is_leaf) -> tuple[list, PyTreeDef]:
    leaves: list = []
    nodes: list = []
    entries = registry._entries
    stack: list = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        x = pop()
        t = type(x)
        if t is _Emit:
            nodes.append((x.t, x.aux, x.arity, len(leaves) - x.leaves0, len(nodes) - x.nodes0 + 1))
            continue
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            nodes.append(_LEAF)
            continue
        if t is tuple or t is list:
            children, aux = x, None
        else:
            entry = entries.get(t)
            if entry is None:
                entry = registry.entry(t) if issubclass(t, tuple) else None
                if entry is None:
                    leaves.append(x)
                    nodes.append(_LEAF)
                    continue
            children, aux = entry.flatten(x)
            if type(children) is not list and type(children) is not tuple:
                children = list(children)
        if children:
            push(_Emit(t, aux, len(children), len(leaves), len(nodes)))
            stack.extend(reversed(children))
        else:
            nodes.append((t, aux, 0, 0, 1))
    return leaves, PyTreeDef(tuple(nodes), registry)


def _flatten_with_path(registry: PyTreeRegistry, tree: Any, is_leaf) -> tuple[list, PyTreeDef]:
    leaves: list = []
    nodes: list = []
    stack: list = [((), tree)]
    while stack:
        path, x = stack.pop()
        if path is None:
            nodes.append((x.t, x.aux, x.arity, len(leaves) - x.leaves0, len(nodes) - x.nodes0 + 1))
            continue
        entry = None if is_leaf is not None and is_leaf(path, x) else registry.entry(type(x))
        if entry is None:
            leaves.append((path, x))
            nodes.append(_LEAF)
            continue
        pairs, aux = entry.flatten_with_keys(x)
        pairs = list(pairs)
        stack.append((None, _Emit(type(x), aux, len(pairs), len(leaves), len(nodes))))
        stack.extend(((*path, k), c) for k, c in reversed(pairs))
    return leaves, PyTreeDef(tuple(nodes), registry)


def _unflatten(registry: PyTreeRegistry, nodes: tuple, leaves: list) -> Any:
    stack: list = []
    push = stack.append
    i = 0
    entries = registry._entries
    for t, aux, arity, _, _ in nodes:
        if t is None:
            push(leaves[i])
            i += 1
            continue
        if arity:
            kids = stack[-arity:]
            del stack[-arity:]
        else:
            kids = []
        if t is tuple:
            push(tuple(kids))
        elif t is list:
            push(kids)
        else:
            entry = entries.get(t) or registry.entry(t)
            push(entry.unflatten(aux, kids))
    return stack[0]


def flatten_up_to(treedef: PyTreeDef, tree: Any, what: str) -> list:
    """The subtrees of `tree` at the leaves of `treedef`, which must be a prefix of its
    structure; a mismatch raises ValueError naming `what` and the key path where it is."""
    out = _up_to(treedef, tree)
    if out is None:
        raise ValueError(_mismatch_message(treedef, tree, what))
    return out


def _up_to(treedef: PyTreeDef, tree: Any) -> list | None:
    registry = treedef._registry
    out: list = []
    stack = [tree]
    for t, aux, arity, _, _ in reversed(treedef._nodes):  # reversed post-order: root first
        x = stack.pop()
        if t is None:
            out.append(x)
            continue
        if type(x) is not t:
            return None
        children, x_aux = registry.entry(t).flatten(x)
        children = list(children)
        if len(children) != arity or not (x_aux is aux or _safe_eq(x_aux, aux)):
            return None
        stack.extend(children)
    out.reverse()
    return out


def _mismatch_message(treedef: PyTreeDef, tree: Any, what: str) -> str:
    """Where and how `tree` departs from `treedef` (the slow path of flatten_up_to)."""
    registry = treedef._registry
    stack: list = [((), tree)]
    for t, aux, arity, _, _ in reversed(treedef._nodes):
        path, x = stack.pop()
        if t is None:
            continue
        where = "".join(map(str, path)) or "the root"
        if type(x) is not t:
            return (f"{what} has a {type(x).__name__} at {where}, where the structure "
                    f"{treedef} has a {_type_name(t)}; they must match.")
        pairs, x_aux = registry.entry(t).flatten_with_keys(x)
        pairs = list(pairs)
        if len(pairs) != arity:
            return (f"{what} has a {_type_name(t)} with {len(pairs)} children at {where}, "
                    f"where the structure {treedef} has {arity}; they must match.")
        if not (x_aux is aux or _safe_eq(x_aux, aux)):
            return (f"{what} has a {_type_name(t)} with node data {_short(x_aux)} at {where}, "
                    f"where the structure {treedef} has {_short(aux)}; they must match.")
        stack.extend(((*path, k), c) for k, c in pairs)
    return f"{what} does not match the structure {treedef}."


def _type_name(t: type) -> str:
    return t.__name__ if t is not type(None) else "None"


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."
