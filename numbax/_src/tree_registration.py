"""Pytree node registration (register_pytree_node and its variants) and Partial."""
from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from numbax._src.pytree import default_registry

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)

def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Makes `nodetype` a pytree node.

    Args:
      nodetype: the class.
      flatten_func: x -> (children, aux_data); aux_data is compared with ==, and need not be
        hashable.
      unflatten_func: (aux_data, children) -> x.
      flatten_with_keys_func: optional x -> (((key, child), ...), aux_data), for key paths.
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node: nodetype is a {type(nodetype).__name__}, "
                        "expected a class.")
    for name, fn in (("flatten_func", flatten_func), ("unflatten_func", unflatten_func)):
        if not callable(fn):
            raise TypeError(f"register_pytree_node: {name} is a {type(fn).__name__}, expected "
                            "a callable.")
    default_registry.register_node(nodetype, flatten_func, unflatten_func,
                                   flatten_with_keys_func)


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator: registers cls via its tree_flatten method and tree_unflatten
    classmethod."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Makes `nodetype` a pytree node whose children have key paths.

    Args:
      nodetype: the class.
      flatten_with_keys: x -> (((key, child), ...), aux_data).
      unflatten_func: (aux_data, children) -> x.
      flatten_func: optional faster x -> (children, aux_data), in the same order.
    """
    if not callable(flatten_with_keys) or not callable(unflatten_func):
        raise TypeError("register_pytree_with_keys: flatten_with_keys and unflatten_func must "
                        "be callables.")
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_with_keys: nodetype is a {type(nodetype).__name__}, "
                        "expected a class.")
    default_registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator: registers cls via tree_flatten_with_keys, tree_unflatten and (if
    defined) tree_flatten."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten)
    return cls


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
    """Registers a dataclass (or a class built from keyword fields) as a pytree node.

    Args:
      nodetype: the class; rebuilt as nodetype(**fields).
      data_fields: the fields that are children; for a dataclass, by default every init field
        not marked static (numbax.tree.static() or field(metadata={"static": True})).
      meta_fields: the fields kept as aux data (static under jit).
      drop_fields: dataclass init fields left out of the pytree.

    Returns:
      nodetype, so this works as a decorator.
    """
    if (data_fields is None) != (meta_fields is None):
        raise TypeError("register_dataclass: data_fields and meta_fields must both be specified"
                        f" when either is specified. Got {data_fields=} {meta_fields=}.")
    if data_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when"
                            f" nodetype is not a dataclass. Got {nodetype=}.")
        fields = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    for name, names in (("data_fields", data_fields), ("meta_fields", meta_fields)):
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"register_dataclass: {name} is {names!r}, expected a sequence of "
                            "field names.")
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = {*data_fields, *meta_fields}
        if given != init:
            msg = ("register_dataclass: data_fields and meta_fields must include all "
                   "dataclass fields with ``init=True`` and only them.")
            if init - given:
                msg += (f" Missing fields: {init - given}. Add them to drop_fields to suppress"
                        " this error.")
            if given - init:
                msg += f" Unexpected fields: {given - init}."
            raise ValueError(msg)
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError("register_dataclass: data_fields and meta_fields must not overlap. "
                         f"Overlapping fields: {overlap}.")
    default_registry.register_dataclass_node(nodetype, list(data_fields), list(meta_fields))
    return nodetype


def register_static(cls: type[T]) -> type[T]:
    """Registers `cls` as a pytree node with no children: instances are aux data, so jit
    treats them as static. Instances must be hashable.

    >>> import numbax
    >>> @numbax.tree_util.register_static
    ... class Tag(str):
    ...     pass
    >>> numbax.tree.leaves([Tag("x"), 1])
    [1]
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_static: cls is a {type(cls).__name__}, expected a class.")
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _: obj)
    return cls


def static_field(**kwargs: Any) -> Any:
    """dataclasses.field(...) marked static for register_dataclass (jax.tree.static)."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)


# ----------------------------------------------------------------------------- Partial


class _PartialFunc:
    """A functools.partial used as a Partial's func: its bound arguments stay out of the
    pytree (functools.partial would otherwise merge them into the outer Partial)."""

    def __init__(self, fun: functools.partial) -> None:
        self.fun = fun

    func = property(lambda self: self.fun.func)
    args = property(lambda self: self.fun.args)
    keywords = property(lambda self: self.fun.keywords)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        return self.fun == (other.fun if isinstance(other, _PartialFunc) else other)

    def __repr__(self) -> str:
        return repr(self.fun)


class Partial(functools.partial):
    """functools.partial as a pytree: the bound arguments are leaves, the function is aux data,
    so a Partial passes through jit, vmap and grad.

    >>> import numbax, numbax.numpy as jnp
    >>> add_one = numbax.tree_util.Partial(jnp.add, 1.0)
    >>> numbax.jit(lambda f, x: f(x))(add_one, 2.0)
    Array(3., dtype=float64, weak_type=True)
    """

    def __new__(cls, func: Callable, *args: Any, **kwargs: Any) -> Partial:
        if not callable(func):
            raise TypeError(f"Partial: func is a {type(func).__name__}, expected a callable.")
        if isinstance(func, functools.partial):
            func = _PartialFunc(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)
