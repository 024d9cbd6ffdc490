"""Mutable array references (jax.new_ref, jax.Ref, jax.ref.get/set/swap/addupdate, freeze).

A Ref made outside any transformation owns a numpy buffer. Read or written eagerly, it is the
buffer; read or written while tracing (jit, grad, vmap, a scan or cond body), it becomes an
effectful ref_get / ref_set equation that the compiled program runs against the buffer at
every call, in program order. A Ref made while tracing holds the traced value of the function
that made it, updated functionally as it is written (so jit and grad see ordinary values); it
can be written only by the trace that made it (not from inside a nested scan/cond/while body).
"""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

from numbax._src import core, dslice, dtypes
from numbax._src import tree_util as tu
from numbax._src.core import ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching


class MemorySpace(enum.Enum):
    """jax.memory.Space: where a buffer lives. numbax has one memory space (host memory)."""

    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"


# ----------------------------------------------------------------------------- primitives

ref_get_p = core.Primitive("ref_get")
ref_set_p = core.Primitive("ref_set", multiple_results=True)


def _ref_get_impl(*, ref):
    return [ref._buffer().copy()]


def _ref_set_impl(value, *, ref):
    buf = ref._buffer()
    buf[...] = np.asarray(value, dtype=buf.dtype)
    return []


def _ref_set_batch(axis_size, vals, dims, *, ref):
    if dims[0] is not None:
        raise NumbaxValueError(
            "performing a set/swap operation with vmapped value on an unbatched array "
            f"reference of type {ref.aval.str_short()}. Move the array reference to be "
            "an argument to the vmapped function?")
    return ref_set_p.bind(vals[0], ref=ref), []


core.abstract_eval_rules[ref_get_p] = lambda *, ref: [ref._aval]
core.impl_rules[ref_get_p] = _ref_get_impl
ad.non_differentiable.add(ref_get_p)  # a Ref made outside the derivative holds a constant
batching.batch_rules[ref_get_p] = lambda axis_size, vals, dims, *, ref: (
    [ref_get_p.bind(ref=ref)], [None])
core.abstract_eval_rules[ref_set_p] = lambda value, *, ref: []
core.impl_rules[ref_set_p] = _ref_set_impl
# writing a value that is being differentiated stores its primal value
ad.jvp_rules[ref_set_p] = lambda primals, tangents, *, ref: (
    ref_set_p.bind(primals[0], ref=ref), [])
batching.batch_rules[ref_set_p] = _ref_set_batch
core.effectful_primitives.update({ref_get_p, ref_set_p})  # reads and writes keep their order


# ----------------------------------------------------------------------------- Ref


class AbstractRef:
    """The abstract value of a Ref (jax.ref.AbstractRef): a Ref is not an array, so numbax
    operations refuse it as an operand (read it with ref[...] first)."""

    __slots__ = ("inner_aval", "memory_space")

    def __init__(self, inner_aval: ShapedArray, memory_space: Any = None) -> None:
        self.inner_aval = inner_aval
        self.memory_space = memory_space

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)

    def str_short(self) -> str:
        return f"Ref{{{self.inner_aval.str_short()}}}"

    __repr__ = str_short

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractRef) and other.inner_aval == self.inner_aval

    def __hash__(self) -> int:
        return hash(("Ref", self.inner_aval))


def _tracing() -> core.MainTrace | None:
    """The innermost active transformation (the one a new Ref belongs to), or None."""
    state = core._state
    top = state.trace_stack[-1]
    dynamic = state.dynamic_trace
    if dynamic is not None and dynamic.level > top.level:
        top = dynamic
    return None if top.level == 0 else top


def _tracing_below(main: core.MainTrace) -> core.MainTrace | None:
    """The innermost transformation enclosing `main` (where a vmapped Ref's writes land)."""
    state = core._state
    top = [m for m in state.trace_stack if m.level < main.level][-1]
    dynamic = state.dynamic_trace
    if dynamic is not None and top.level < dynamic.level < main.level:
        top = dynamic
    return None if top.level == 0 else top


class Ref:
    """A mutable array reference: `ref[idx]` reads, `ref[idx] = value` writes in place.

    >>> import numbax, numbax.numpy as jnp
    >>> ref = numbax.new_ref(jnp.zeros(3))
    >>> ref[1] = 5.0
    >>> ref
    Ref([0., 5., 0.], dtype=float64)
    """

    __slots__ = ("_aval", "_buf", "_value", "_main", "_alive", "memory_space", "kind",
                 "__weakref__")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("numbax.Ref cannot be constructed directly; use numbax.new_ref.")

    @classmethod
    def _make(cls, init: Any, memory_space: Any, kind: Any) -> Ref:
        self = object.__new__(cls)
        aval = get_aval(init)
        self._aval = ShapedArray(aval.shape, aval.dtype)
        self._main = _tracing()
        self._alive = True
        self.memory_space, self.kind = memory_space, kind
        if self._main is None:
            self._buf = np.array(core.to_numpy(init), dtype=aval.dtype, copy=True)
            self._value = None
        else:
            self._buf = None
            self._value = init
        return self

    aval = property(lambda self: AbstractRef(self._aval, self.memory_space))
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: self._aval.ndim)
    size = property(lambda self: self._aval.size)

    def _check_alive(self) -> None:
        if not self._alive:
            raise NumbaxValueError("This Ref was frozen or freed; it can no longer be read or "
                                   "written. Use the value freeze returned.")

    def _buffer(self) -> np.ndarray:
        self._check_alive()
        return self._buf

    def _read(self) -> Any:
        self._check_alive()
        if self._main is not None:
            return self._value
        return ref_get_p.bind(ref=self)

    def _write(self, value: Any) -> None:
        self._store(value, _tracing())

    def _store(self, value: Any, at: core.MainTrace | None) -> None:
        """Writes the whole value, as seen from the transformation `at`."""
        self._check_alive()
        if self._main is None:
            ref_set_p.bind(value, ref=self)
            return
        if at is not self._main or not self._main.active:
            raise NumbaxValueError(
                "numbax: this Ref was made inside a traced function and is written here from "
                "a nested transformation (a scan/cond/while body or an inner jit): numbax "
                "cannot carry it out of that body. Make the Ref outside the traced function, "
                "or carry its value through the loop.")
        self._value = value

    def __len__(self) -> int:
        if not self.shape:
            raise NumbaxTypeError("len() of unsized object (a 0-d Ref)")
        return self.shape[0]

    def __getitem__(self, idx: Any) -> Any:
        return get(self, idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        set(self, idx, value)  # noqa: A001 - jax.ref.set

    def addupdate(self, x: Any, idx: Any = ()) -> None:
        """ref[idx] += x, in place."""
        addupdate(self, idx, x)

    def __repr__(self) -> str:
        if not self._alive:
            return f"Ref(<freed>, dtype={self.dtype.name})"
        value = self._buf if self._main is None else None
        if value is None:
            return f"Ref<{self._aval.str_short()}>"
        body = np.array2string(value, separator=", ", prefix="Ref(")
        return f"Ref({body}, dtype={self.dtype.name})"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(core.concrete_or_error(self._read(), "converting a Ref to numpy"),
                        dtype=dtype)


# A Ref passes through jit/grad arguments as itself (static structure, no leaves): the
# traced function reads and writes the caller's Ref.
tu.register_pytree_node(Ref, lambda r: ((), r), lambda r, _: r)


class _BatchedRef(Ref):
    """A Ref mapped by vmap along `axis`: each example reads and writes its slice of `base`."""

    __slots__ = ("_base", "_axis", "_trace")

    @classmethod
    def _view(cls, base: Ref, axis: int, cont: Any) -> _BatchedRef:
        self = object.__new__(cls)
        aval = base._aval
        self._base, self._axis = base, axis % aval.ndim
        self._trace = cont(np.zeros(1), 0)._trace  # the vmap's BatchTrace
        shape = aval.shape[:self._axis] + aval.shape[self._axis + 1:]
        self._aval = ShapedArray(shape, aval.dtype)
        self._main, self._alive = None, True
        self.memory_space, self.kind = base.memory_space, base.kind
        return self

    def _check_alive(self) -> None:
        self._base._check_alive()

    def _read(self) -> Any:
        return batching.BatchTracer(self._trace, self._base._read(), self._axis)

    def _store(self, value: Any, at: core.MainTrace | None) -> None:
        main = self._trace.main
        if at is not main or not main.active:
            raise NumbaxValueError(
                "numbax: a Ref mapped by vmap is written from a nested transformation (a "
                "scan/cond/while body or an inner jit) inside the vmapped function; numbax "
                "cannot carry the write out of that body. Write it in the vmapped function.")
        t = core.full_raise(self._trace, value)
        size = self._trace.axis_data.size
        full = batching.move_batch_axis(size, t.batch_dim, self._axis, t.val)
        self._base._store(full, _tracing_below(main))

    def __repr__(self) -> str:
        return f"BatchedRef<{self._aval.str_short()}>"


def _ref_to_elt(cont: Any, get_idx: Any, ref: Ref, spec: Any) -> Ref:
    if spec is None:
        return ref
    if not isinstance(spec, int) or not -ref.ndim <= spec < max(ref.ndim, 1):
        raise NumbaxValueError(f"vmap: in_axes is {spec!r} for a Ref of type "
                               f"{ref.aval.str_short()}, expected None or an axis of the Ref.")
    return _BatchedRef._view(ref, spec, cont)


def _ref_from_elt(cont: Any, axis_size: int, ref: Ref, spec: Any) -> Ref:
    if isinstance(ref, _BatchedRef) and spec == ref._axis:
        return ref._base
    raise NumbaxValueError("vmap: a Ref returned from a vmapped function must be a mapped "
                           "argument Ref returned with out_axes equal to its in_axes.")


for _cls in (Ref, _BatchedRef):  # vmap maps a Ref argument along its in_axes
    batching.vmappables[_cls] = (int, int, _ref_to_elt, _ref_from_elt)


def _whole(idx: Any) -> bool:
    """Whether idx selects the whole Ref (None, (), ...)."""
    return idx is None or idx is Ellipsis or (isinstance(idx, tuple) and (
        len(idx) == 0 or (len(idx) == 1 and idx[0] is Ellipsis)))


def _index(value: Any, idx: Any) -> Any:
    from numbax._src import jnp

    if _whole(idx):
        return value
    return jnp.asarray(value)[idx]


def _updated(value: Any, idx: Any, new: Any, op: str) -> Any:
    from numbax._src import jnp

    old = jnp.asarray(value)
    if _whole(idx):
        out = jnp.add(old, new) if op == "add" else jnp.broadcast_to(new, old.shape)
        return out.astype(old.dtype)
    if dslice.has_slices(idx):  # ds entries: the window is updated as a dynamic slice
        return _update_window(old, idx, new, op)
    at = old.at[idx]
    return at.add(new) if op == "add" else at.set(new)


def _update_window(old: Any, idx: Any, new: Any, op: str) -> Any:
    from numbax._src import jnp
    from numbax._src.lax import indexing

    entries = list(idx) if isinstance(idx, tuple) else [idx]
    if not all(isinstance(e, (dslice.Slice, slice)) for e in entries) or any(
            isinstance(e, slice) and e != slice(None) for e in entries) or any(
            isinstance(e, dslice.Slice) and e.stride != 1 for e in entries):
        raise NumbaxTypeError("Ref: writing through ds() supports ds(start, size) and ':' "
                              "entries only.")
    starts = [e.start if isinstance(e, dslice.Slice) else 0 for e in entries]
    starts += [0] * (old.ndim - len(starts))
    window = jnp.asarray(old)[idx]
    upd = jnp.broadcast_to(new, window.shape).astype(old.dtype)
    if op == "add":
        upd = window + upd
    return indexing.dynamic_update_slice(old, upd, starts)


def _check_ref(api: str, ref: Any, idx: Any = None) -> Ref:
    if not isinstance(ref, Ref):
        raise NumbaxTypeError(f"{api}: ref is a {type(ref).__name__}, expected a Ref made by "
                              "numbax.new_ref.")
    entries = idx if isinstance(idx, tuple) else (idx,)
    for i, (e, dim) in enumerate(zip(entries, ref.shape)):
        if isinstance(e, (int, np.integer)) and not isinstance(e, bool) and e >= dim:
            # JAX's check and class: it also stops iteration (list(ref)) at the end
            raise NumbaxValueError(
                f"{api}: index {i} has {int(e)}, expected < {dim} (Out of bound indexer: "
                f"idx={int(e)}, dim={dim}). Index within the Ref's shape {ref.shape}.")
    return ref


def get(ref: Ref, idx: Any = None) -> Any:
    """ref[idx]: the indexed elements of the Ref, as an Array."""
    return _index(_check_ref("ref.get", ref, idx)._read(), idx)


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001 - JAX's name
    """ref[idx] = value, in place."""
    ref = _check_ref("ref.set", ref, idx)
    _check_value("ref.set", value)
    ref._write(_updated(ref._read(), idx, value, "set"))


def swap(ref: Ref, idx: Any, value: Any) -> Any:
    """Writes value at ref[idx] and returns what was there."""
    ref = _check_ref("ref.swap", ref, idx)
    _check_value("ref.swap", value)
    current = ref._read()
    ref._write(_updated(current, idx, value, "set"))
    return _index(current, idx)


def addupdate(ref: Ref, idx: Any, x: Any) -> None:
    """ref[idx] += x, in place."""
    ref = _check_ref("ref.addupdate", ref, idx)
    _check_value("ref.addupdate", x)
    ref._write(_updated(ref._read(), idx, x, "add"))


def _check_value(api: str, value: Any) -> None:
    if isinstance(value, Ref):
        raise NumbaxTypeError(f"{api}: value is a Ref; write its value (ref[...]) instead.")
    if not core.is_array_like(value):
        raise NumbaxTypeError(f"{api}: value is a {type(value).__name__}, expected an array "
                              "or a scalar.")


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A mutable array reference holding a copy of `init_val` (memory_space is accepted; numbax
    has one memory space). kind may be None or 'no_grad_no_remat'.

    >>> ref = new_ref(np.arange(3))
    >>> ref[0] = 7
    >>> ref[...]
    Array([7, 1, 2], dtype=int64)
    """
    if isinstance(init_val, Ref):
        raise NumbaxTypeError("new_ref: init_val is a Ref; pass its value (ref[...]).")
    if not core.is_array_like(init_val):
        raise NumbaxTypeError(f"new_ref: init_val is a {type(init_val).__name__}, expected an "
                              "array or a scalar.")
    if kind not in (None, "no_grad_no_remat"):
        raise NumbaxValueError(f"new_ref: kind is {kind!r}, expected None or "
                               "'no_grad_no_remat'.")
    return Ref._make(init_val, memory_space, kind)


def empty_ref(ty: Any, memory_space: Any = None) -> Ref:
    """A Ref of type `ty` (an object with .shape and .dtype) whose contents are to be written
    before they are read (numbax fills it with zeros)."""
    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None:
        raise NumbaxTypeError(f"empty_ref: ty is a {type(ty).__name__}, expected an object with "
                              ".shape and .dtype (e.g. numbax.ShapeDtypeStruct).")
    zeros = np.zeros(tuple(shape), dtypes.canonicalize_dtype(np.dtype(dtype)))
    return Ref._make(zeros, memory_space, None)


def freeze(ref: Ref) -> Any:
    """The final value of the Ref, which can no longer be used."""
    ref = _check_ref("freeze", ref)
    value = ref._read()
    ref._alive = False
    return _index(value, None)


def free_ref(ref: Ref) -> None:
    """Releases the Ref, which can no longer be used."""
    ref = _check_ref("free_ref", ref)
    ref._check_alive()
    ref._alive = False
    ref._buf = ref._value = None
