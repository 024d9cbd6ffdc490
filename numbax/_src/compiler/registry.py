"""The lowering registry: how each primitive is emitted, keyed by the Primitive object.

An entry (`Lowering`) says how a primitive joins a fused loop nest (its fusion kind, its scalar
expression, the dtypes that form covers), how it renders inside compiled control flow (an
array expression, or statements for control-flow primitives), and how the driver runs it on
its own (a library rule). `register(prim, ...)` fills the backend-neutral entry;
`register(prim, backend="cpu", ...)` adds fields that replace the neutral ones on that
backend, as JAX's `register_lowering(..., platform=)` and tinygrad's per-renderer op tables
do. Whether a primitive is supported on a backend is read off this table (`fusible`,
`library`); a primitive with no entry still runs under jit through its eager implementation.
The family modules of `compiler/lowerings/` fill the table when the compiler is imported.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from numbax._src.core import JaxprEqn, Primitive
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax.index_map import AxisRead

BACKENDS = ("cpu", "cuda")

ScalarRule = Callable[[list[str], JaxprEqn], str]
EqnPredicate = Callable[[JaxprEqn], bool]


class Fusion(enum.Enum):
    """How an equation joins a loop nest."""

    ELEMENTWISE = "elementwise"  # each output element from the same element of each operand
    # reads its one array operand at an index made from the loop's (broadcast_in_dim, slice):
    # the entry's `reads` says where (AxisRead per operand axis)
    INDEX_MAP = "index_map"
    REDUCTION = "reduction"  # folds axes of its operand into an accumulator
    # loads from its first operand, a whole array no equation of the nest makes, at a position
    # made from its other operands' elements (point_gathers.lookup_p)
    LOOKUP = "lookup"
    SOURCE = "source"  # a function of the loop index alone (iota)


class Unsupported(Exception):
    """A form of a primitive a rule cannot express (an array rule in compiled control flow):
    the caller falls back to running it another way."""


class _Eager:
    """The library rule of a primitive that drivers run through its eager implementation by
    design (LAPACK, sorts, collectives inside pmap workers): nothing to compile, no warning."""

    def __repr__(self) -> str:
        return "EAGER"


EAGER = _Eager()


@dataclass(frozen=True)
class Monoid:
    """A reduction's accumulator: `identity(dtype)` of the operand dtype, `combine(a, b, dtype)`
    the expression folding two partials, and what renderers ask of it."""

    identity: Callable[[np.dtype], Any]
    combine: Callable[[str, str, np.dtype], str]
    widens: bool = False  # accumulates float32 in float64 and small integers in 64 bits
    reassociates: bool = False  # a float sum/product: lanes and chunks may reorder it
    selects: bool = False  # max/min: the result is one of the operands (NaN flags, ties)
    # CPU row passes may add a block of float32 operands in float32 lanes and widen each
    # block's partial once (sums only: a block's float32 product can underflow where the wide
    # accumulator would not)
    blocks: bool = False
    # CPU: the accumulator update inside vectorised row passes (reduce_ops helpers), and the
    # in-place operator of a prange reduction (Numba recognises `acc += v`)
    row_update: Callable[[str, str], str] | None = None
    inplace: str | None = None

    def acc_dtype(self, dtype: np.dtype) -> np.dtype:
        """The accumulator dtype for an operand of `dtype`."""
        dtype = np.dtype(dtype)
        if self.widens:
            if dtype == np.float32:
                return np.dtype(np.float64)
            if dtype.kind in "iu" and dtype.itemsize < 8:
                return np.dtype(np.int64 if dtype.kind == "i" else np.uint64)
        return dtype


@dataclass(frozen=True)
class Lowering:
    """How one primitive is emitted (fields left None: not that way).

    scalar(args, eqn) -> expression of one element inside a loop nest; scalar_ok(eqn): whether
    the loop-nest form covers this equation (dtypes); cast: whether the expression is cast to
    the output dtype (comparisons are not); heavy: the form calls a costly function
    (exp/log/...: renderers store rather than recompute it, and parallelise sooner);
    monoid: a reduction's accumulator. array(args, eqn) -> an array expression inside
    compiled control flow; statements(fn, eqn, ins, lines, pad) -> output names, for
    control-flow primitives rendered inside a compiled function; host(eqn, compile) -> a
    Python callable running it from the driver. library: the backend's driver-level rule;
    library_ok(eqn): whether it covers this equation. in_place(eqn, ins, buffer): the library
    rule's form that writes its output into `buffer`, its first operand's own (donated)
    buffer (dynamic_update_slice, scatter: a loop's carry updated without a copy). inline:
    the param holding the jaxpr of a call-like primitive (inlined before fusion). expand(eqn)
    -> a ClosedJaxpr of the equation's operands computing its outputs from other primitives,
    spliced in as a call's is (a primitive with no kernel of its own: JAX's lower_fun).
    reads(eqn) -> an index map's AxisRead for each axis of its operand."""

    fusion: Fusion | None = None
    scalar: ScalarRule | None = None
    scalar_ok: EqnPredicate | None = None
    cast: bool = True
    heavy: bool = False
    monoid: Monoid | None = None
    array: ScalarRule | None = None
    statements: Callable[..., list[str]] | None = None
    host: Callable[..., Callable] | None = None
    library: Callable[..., Any] | None = None
    library_ok: EqnPredicate | None = None
    in_place: Callable[..., str] | None = None
    inline: str | None = None
    expand: Callable[[JaxprEqn], Any] | None = None
    # a few instructions on every backend (integer and float arithmetic, conversions, moves):
    # a later kernel recomputes it rather than read its stored result (remat.rematerialize)
    cheap: bool = False
    reads: Callable[[JaxprEqn], tuple[AxisRead, ...]] | None = None


_FIELDS = frozenset(f.name for f in fields(Lowering))
_neutral: dict[Primitive, Lowering] = {}
_overrides: dict[str, dict[Primitive, dict[str, Any]]] = {b: {} for b in BACKENDS}
_merged: dict[tuple[Primitive, str], Lowering | None] = {}


def register(prim: Primitive, fusion: Fusion | None = None, *, backend: str | None = None,
             **entries: Any) -> None:
    """Adds `fusion` and the `entries` fields to `prim`'s lowering: the neutral entry, or with
    `backend` the fields that replace the neutral ones there."""
    if not isinstance(prim, Primitive):
        raise NumbaxTypeError(f"register: prim has type {type(prim).__name__}, expected a "
                              "Primitive. Pass the primitive object (e.g. lax.exp_p).")
    unknown = set(entries) - _FIELDS
    if unknown:
        raise NumbaxTypeError(f"register({prim.name}): unknown lowering fields "
                              f"{sorted(unknown)}, expected names of Lowering's fields.")
    if fusion is not None:
        entries["fusion"] = fusion
    if backend is None:
        _neutral[prim] = replace(_neutral.get(prim, Lowering()), **entries)
    elif backend in _overrides:
        _overrides[backend].setdefault(prim, {}).update(entries)
    else:
        raise NumbaxValueError(f"register({prim.name}): backend has value {backend!r}, "
                               f"expected one of {BACKENDS}.")
    _merged.clear()


def lowering(prim: Primitive, backend: str) -> Lowering | None:
    """The lowering of `prim` on `backend` (neutral fields replaced by the backend's), or
    None when nothing is registered for it there."""
    key = (prim, backend)
    if key not in _merged:
        base, extra = _neutral.get(prim), _overrides[backend].get(prim)
        if base is None and extra is None:
            _merged[key] = None
        else:
            _merged[key] = replace(base or Lowering(), **(extra or {}))
    return _merged[key]


def fusion_kind(prim: Primitive) -> Fusion | None:
    """How `prim` joins loop nests on every backend (None: it never does)."""
    entry = _neutral.get(prim)
    return entry.fusion if entry is not None else None


def reads_whole(eqn: JaxprEqn, x: Any) -> bool:
    """Whether `eqn` reads `x` as a whole array rather than at its loop's index: a lookup's
    table (then x cannot be computed in the equation's nest)."""
    return fusion_kind(eqn.primitive) is Fusion.LOOKUP and eqn.invars[0] is x


def axis_reads(eqn: JaxprEqn) -> tuple[AxisRead, ...]:
    """Where an index-map equation reads each axis of its operand (neutral entry)."""
    return _neutral[eqn.primitive].reads(eqn)


def cheap(prim: Primitive) -> bool:
    """Whether `prim` costs a few instructions an element on every backend (neutral entry)."""
    entry = _neutral.get(prim)
    return entry is not None and entry.cheap


def inline_param(prim: Primitive) -> str | None:
    """For a call-like primitive, the param holding the jaxpr it calls (None otherwise)."""
    entry = _neutral.get(prim)
    return entry.inline if entry is not None else None


def expansion(eqn: JaxprEqn) -> Any:
    """The ClosedJaxpr an expanded primitive's equation is written as (None: not expanded)."""
    entry = _neutral.get(eqn.primitive)
    return entry.expand(eqn) if entry is not None and entry.expand is not None else None


def fusible(eqn: JaxprEqn, backend: str) -> bool:
    """Whether `eqn` can join a loop nest on `backend`."""
    low = lowering(eqn.primitive, backend)
    if low is None or low.fusion is None:
        return False
    if low.fusion in (Fusion.ELEMENTWISE, Fusion.LOOKUP) and low.scalar is None:
        return False
    if low.fusion is Fusion.INDEX_MAP and eqn.outvars[0].aval.ndim == 0:
        return False  # a 0-d "broadcast" is a copy: no loop to join
    return low.scalar_ok is None or low.scalar_ok(eqn)


def library(eqn: JaxprEqn, backend: str) -> Callable[..., Any] | _Eager | None:
    """The driver-level rule running `eqn` on `backend`, EAGER, or None (nothing covers it:
    the driver runs the eager impl too, with a warning when the primitive is unregistered)."""
    low = lowering(eqn.primitive, backend)
    if low is None or low.library is None:
        return None
    if low.library_ok is not None and not low.library_ok(eqn):
        return None
    return low.library


def is_registered(prim: Primitive) -> bool:
    """Whether any backend knows `prim` (else jit runs its eager impl, with a warning)."""
    return prim in _neutral or any(prim in table for table in _overrides.values())


def registered() -> list[Primitive]:
    """Every primitive with a neutral or backend entry."""
    seen = dict.fromkeys(_neutral)
    for table in _overrides.values():
        seen.update(dict.fromkeys(table))
    return list(seen)
