"""The fuzzer's operations: for each, its numbax form, its numpy reference, the operand kinds it
takes, whether compiled code must match eager bit for bit, and how its parameters are drawn.

An op is applied to values of the program (`args`) with parameters drawn once (a tuple of
(name, value) pairs, so programs hash and print). `inexact` names the operand kinds for which
compiled and eager code may round differently (transcendental functions, reordered sums,
matrix products): such results are compared within a tolerance (oracles.py), and ops marked
`discrete` (comparisons, rounding, integer casts...) are never applied to them, since a last-bit
difference would flip their output."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import numbax.numpy as jnp
from numbax import lax
from tests.jax_promotion import jax_promoted

Aval = tuple[tuple[int, ...], np.dtype]
KINDS = "biufc"


@dataclass(frozen=True)
class OpSpec:
    name: str
    arity: int
    kinds: str  # operand kinds taken
    nbx: Callable[..., Any]  # (params dict, *operands) -> numbax value
    ref: Callable[..., Any]  # (params dict, *operands) -> numpy value
    inexact: str = ""  # operand kinds whose results may differ in the last bits under jit
    smooth: bool = False  # differentiable on the inputs of gradient programs
    discrete: bool = False  # a step function of its float operands
    preserves: bool = False  # output has its first operand's shape and dtype
    params: Callable[[Any, list[Aval]], dict] | None = None  # (draw, first aval) -> params
    literal_ok: bool = False  # binary: the second operand may be a Python scalar (weak)
    # the shapes of the operands after the first, from it and the params (default: drawn
    # broadcast-compatible shapes); their dtypes are drawn from `kinds`
    shapes: Callable[[Any, Aval, dict], list[tuple[int, ...]]] | None = None
    valid: Callable[[Aval], bool] | None = None  # which first operands it takes
    other_kinds: tuple[str, ...] | None = None  # kinds of the other operands (default: kinds)
    sums: bool = False  # a reordered sum: its rounding error scales with the sum of |terms|


OPS: dict[str, OpSpec] = {}


def op(name: str, arity: int, kinds: str, nbx, ref, **kw) -> None:
    OPS[name] = OpSpec(name, arity, kinds, nbx, ref, **kw)


def _np(fn):
    """A numpy ufunc as a reference taking (params, *operands)."""
    return lambda p, *xs: fn(*xs)


def _nb(fn):
    return lambda p, *xs: fn(*xs)


# ----------------------------------------------------------------------------- elementwise

for _name, _kinds, _inexact, _smooth, _discrete in (
        ("negative", "iufc", "", True, False), ("absolute", "iuf", "", False, False),
        ("square", "iufc", "c", True, False), ("sign", "iuf", "", False, True),
        ("sin", "fc", "fc", True, False), ("cos", "fc", "fc", True, False),
        ("tanh", "fc", "fc", True, False), ("exp", "fc", "fc", False, False),
        ("log", "fc", "fc", False, False), ("sqrt", "fc", "c", False, False),
        ("expm1", "f", "f", False, False), ("log1p", "f", "f", False, False),
        ("floor", "f", "", False, True), ("ceil", "f", "", False, True),
        ("rint", "f", "", False, True), ("isfinite", "fc", "", False, True),
        ("isnan", "fc", "", False, True), ("logical_not", "b", "", False, True),
        ("invert", "biu", "", False, True), ("arctan", "f", "f", True, False)):
    op(_name, 1, _kinds, _nb(getattr(jnp, _name)), _np(getattr(np, _name)), inexact=_inexact,
       smooth=_smooth, discrete=_discrete,
       preserves=_name not in ("isfinite", "isnan") and _name != "sqrt")
op("sigmoid", 1, "f", lambda p, x: __import__("numbax").nn.sigmoid(x),
   lambda p, x: 1 / (1 + np.exp(-x)), inexact="f", smooth=True, preserves=True)


def _lit_or(args: tuple, p: dict) -> tuple:
    return (args[0], p["lit"]) if "lit" in p else args


def _floor_divide_as_xla(x, y):
    """np.floor_divide, but integer division by zero as JAX gives it (docs/sharp_bits.md):
    XLA's quotient has all bits set (-1 signed, the largest value unsigned), and floor's
    correction steps a nonzero signed dividend down to -2; numpy gives 0."""
    out = np.asarray(np.floor_divide(x, y))
    if out.dtype.kind not in "iu":
        return out
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    if out.dtype.kind == "u":
        by_zero = np.iinfo(out.dtype).max
    else:
        by_zero = np.where(x == 0, -1, -2)
    return np.where(y == 0, by_zero, out).astype(out.dtype)


def _mean_as_jax(x, axis, keepdims):
    """np.mean, in JAX's result dtype for integer and bool inputs: float64 for 64-bit
    integers, float32 for narrower ones (numpy gives float64 for all)."""
    if x.dtype.kind not in "biu":
        return np.mean(x, axis=axis, keepdims=keepdims)
    out = np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float64)
    return np.asarray(out).astype(np.float64 if x.dtype.itemsize == 8 else np.float32)


def _maximum_as_jax(x, y):
    """np.maximum with JAX's signed zeros: +0 against -0 is +0 in either order (numpy gives
    one of them by position). Of two zeros x + y is the larger: (+0) + (-0) = +0."""
    out = np.maximum(x, y)
    if np.asarray(out).dtype.kind != "f":
        return out
    return np.where((x == 0) & (y == 0), x + y, out).astype(np.asarray(out).dtype)


def _minimum_as_jax(x, y):
    """np.minimum with JAX's signed zeros: -0 against +0 is -0 in either order."""
    return -_maximum_as_jax(-x, -y) if np.asarray(np.minimum(x, y)).dtype.kind == "f" \
        else np.minimum(x, y)


# numpy functions whose answer differs from JAX's where numbax follows JAX
_JAX_REFERENCES = {"floor_divide": _floor_divide_as_xla, "mean": _mean_as_jax,
                   "maximum": _maximum_as_jax, "minimum": _minimum_as_jax}


def _binary(name: str, kinds: str, inexact: str = "", smooth: bool = False,
            discrete: bool = False, np_name: str | None = None) -> None:
    jfn, nfn = getattr(jnp, name), _JAX_REFERENCES.get(name) or getattr(np, np_name or name)
    op(name, 2, kinds, lambda p, *xs: jfn(*_lit_or(xs, p)),
       lambda p, *xs: nfn(*_lit_or(jax_promoted(xs), p)), inexact=inexact, smooth=smooth,
       discrete=discrete, preserves=True, literal_ok=True)


for _name, _kinds, _inexact, _smooth in (
        ("add", "biufc", "", True), ("subtract", "iufc", "", True),
        ("multiply", "biufc", "c", True), ("true_divide", "fc", "c", False),
        ("maximum", "biuf", "", False), ("minimum", "biuf", "", False),
        ("floor_divide", "iuf", "", False), ("remainder", "iuf", "", False),
        ("arctan2", "f", "f", False), ("bitwise_and", "biu", "", False),
        ("bitwise_or", "biu", "", False), ("bitwise_xor", "biu", "", False)):
    _binary(_name, _kinds, _inexact, _smooth)
for _name in ("less", "less_equal", "greater", "equal", "not_equal"):
    _binary(_name, "biuf", discrete=True)
op("power", 2, "f", _nb(jnp.power), _np(np.power), inexact="f", preserves=True)


def _shift_amount(draw, avals: list[Aval]) -> dict:
    bits = avals[0][1].itemsize * 8
    return {"lit": draw(st.integers(0, bits + 2))}


op("left_shift", 1, "iu", lambda p, x: jnp.left_shift(x, p["lit"]),
   lambda p, x: np.left_shift(x, x.dtype.type(p["lit"])), params=_shift_amount,
   preserves=True)
op("right_shift", 1, "iu", lambda p, x: jnp.right_shift(x, p["lit"]),
   lambda p, x: np.right_shift(x, x.dtype.type(p["lit"])), params=_shift_amount,
   preserves=True)

_CASTS = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def _cast_param(draw, avals: list[Aval]) -> dict:
    src = avals[0][1]
    targets = [t for t in _CASTS if not (src.kind == "c" and np.dtype(t).kind != "c")]
    return {"dtype": draw(st.sampled_from(targets))}


def _jax_cast(x: np.ndarray, dtype: str) -> np.ndarray:
    """numpy's cast, except floats to integers as JAX converts them (truncated, saturated at
    the type's range, NaN to 0), here in Python's exact integers."""
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if x.dtype.kind != "f" or info is None:
        return x.astype(dtype)
    values = [0 if v != v else info.max if v >= info.max + 1 else
              info.min if v <= info.min - 1 else int(v) for v in x.ravel().tolist()]
    return np.array(values, dtype).reshape(x.shape)


# the numbax side casts through jnp: an input arrives as a numpy array, whose own astype
# would compare numpy with itself
op("astype", 1, KINDS, lambda p, x: jnp.asarray(x).astype(p["dtype"]),
   lambda p, x: _jax_cast(x, p["dtype"]), params=_cast_param, discrete=True)
op("where", 3, KINDS, lambda p, x, c, y: jnp.where(c, x, y),
   lambda p, x, c, y: np.where(c, *jax_promoted((x, y))),
   preserves=True, other_kinds=("b", KINDS))

# ----------------------------------------------------------------------------- reductions


def _axis_param(draw, avals: list[Aval], nonempty: bool = False) -> dict:
    shape = avals[0][0]
    axes = [a for a in range(len(shape)) if not nonempty or shape[a] > 0]
    choices = [None, *axes, *[a - len(shape) for a in axes]]
    if nonempty and any(s == 0 for s in shape):
        choices.remove(None)
    axis = draw(st.sampled_from(choices)) if choices else draw(st.just(None))
    return {"axis": axis, "keepdims": draw(st.booleans())}


def _reduction(name: str, kinds: str, inexact: str, nonempty: bool = False,
               smooth: bool = False, discrete: bool = False) -> None:
    jfn, nfn = getattr(jnp, name), _JAX_REFERENCES.get(name) or getattr(np, name)
    op(name, 1, kinds, lambda p, x: jfn(x, axis=p["axis"], keepdims=p["keepdims"]),
       lambda p, x: nfn(x, axis=p["axis"], keepdims=p["keepdims"]), inexact=inexact,
       smooth=smooth, discrete=discrete, sums=name in ("sum", "mean"),
       params=lambda draw, avals: _axis_param(draw, avals, nonempty))


_reduction("sum", "biufc", "fc", smooth=True)
_reduction("prod", "biufc", "fc", smooth=True)
# (the mean of integers is a float sum too: its order shows where large values cancel)
_reduction("mean", "iufc", "iufc", smooth=True)
_reduction("max", "biuf", "", nonempty=True)
_reduction("min", "biuf", "", nonempty=True)
_reduction("any", KINDS, "", discrete=True)
_reduction("all", KINDS, "", discrete=True)


def _arg_param(draw, avals: list[Aval]) -> dict:
    shape = avals[0][0]
    if not shape:
        return {"axis": None}
    axes = [a for a in range(len(shape)) if shape[a] > 0]
    if not axes or not all(s > 0 for s in shape):
        return {"axis": draw(st.sampled_from(axes))} if axes else {"axis": 0}
    return {"axis": draw(st.sampled_from([None, *axes]))}


for _name in ("argmax", "argmin"):
    op(_name, 1, "biuf", (lambda f: lambda p, x: f(x, axis=p["axis"]))(getattr(jnp, _name)),
       (lambda f: lambda p, x: f(x, axis=p["axis"]))(getattr(np, _name)), discrete=True,
       params=_arg_param)


def _cum_param(draw, avals: list[Aval]) -> dict:
    nd = len(avals[0][0])
    return {"axis": draw(st.sampled_from(range(nd))) if nd else None}


op("cumsum", 1, "iufc", lambda p, x: jnp.cumsum(x, axis=p["axis"]),
   # JAX keeps an integer input's dtype (numpy widens int8..int32 to int64)
   lambda p, x: np.cumsum(x, axis=p["axis"], dtype=x.dtype if x.dtype.kind in "iu" else None),
   inexact="fc", params=_cum_param, smooth=True,
   sums=True)

# ----------------------------------------------------------------------------- indexing


def _index_param(draw, avals: list[Aval]) -> dict:
    """A static basic index: ints (in range), slices with any step, None and Ellipsis."""
    shape = avals[0][0]
    parts = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "all"] if n else ["slice", "all"]))
        if kind == "int":
            parts.append(("int", draw(st.integers(-n, n - 1))))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            step = draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
            parts.append(("slice", start, stop, step))
        else:
            parts.append(("all",))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), ("none",))
    return {"index": tuple(parts)}


def _build_index(parts: tuple) -> tuple:
    out = []
    for p in parts:
        if p[0] == "int":
            out.append(p[1])
        elif p[0] == "slice":
            out.append(slice(p[1], p[2], p[3]))
        elif p[0] == "none":
            out.append(None)
        else:
            out.append(slice(None))
    return tuple(out)


op("getitem", 1, KINDS, lambda p, x: x[_build_index(p["index"])],
   lambda p, x: x[_build_index(p["index"])], params=_index_param, smooth=True)


def _gather_param(draw, avals: list[Aval]) -> dict:
    shape = avals[0][0]
    axis = draw(st.sampled_from([a for a in range(len(shape)) if shape[a] > 0]))
    n = shape[axis]
    idx = draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=4))
    return {"axis": axis, "idx": tuple(idx)}


op("take", 1, KINDS, lambda p, x: jnp.take(x, np.array(p["idx"], np.int64), axis=p["axis"]),
   lambda p, x: np.take(x, np.array(p["idx"], np.int64), axis=p["axis"]),
   params=_gather_param, smooth=True, valid=lambda aval: any(n > 0 for n in aval[0]))


def _scatter_param(draw, avals: list[Aval]) -> dict:
    n = avals[0][0][0]
    mode = draw(st.sampled_from(["set", "add", "multiply", "min", "max"]))
    unique = mode == "set"
    idx = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3,
                        unique_by=(lambda i: i % n) if unique else None))
    return {"mode": mode, "idx": tuple(idx)}


def _scatter_nbx(p: dict, x, v):
    ref = jnp.asarray(x).at[np.array(p["idx"], np.int64)]
    return getattr(ref, p["mode"])(v)


_UFUNC_AT = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_ref(p: dict, x, v):
    out = np.array(x, copy=True)
    idx = np.array(p["idx"], np.int64)
    # the updates take x's dtype as JAX's `.at[]` casts them (floats into integers saturate)
    v = np.broadcast_to(_jax_cast(np.asarray(v), out.dtype.name), (len(idx), *out.shape[1:]))
    if p["mode"] == "set":
        out[idx] = v
    else:
        _UFUNC_AT[p["mode"]].at(out, idx, v)
    return out


def _scatter_shapes(draw, aval: Aval, p: dict) -> list[tuple[int, ...]]:
    full = (len(p["idx"]), *aval[0][1:])
    return [full[draw(st.integers(0, len(full))):]]  # a trailing part broadcasts


op("scatter", 2, "iuf", _scatter_nbx, _scatter_ref, params=_scatter_param, inexact="f", sums=True,
   shapes=_scatter_shapes, valid=lambda aval: len(aval[0]) >= 1 and aval[0][0] > 0)


def _dyn_param(draw, avals: list[Aval]) -> dict:
    shape = avals[0][0]
    sizes = tuple(draw(st.integers(0, n)) for n in shape)
    starts = tuple(draw(st.integers(-2, n + 1)) for n in shape)
    return {"starts": starts, "sizes": sizes}


def _dyn_ref(p: dict, x):
    """JAX's rule: a negative start counts from the end (once), then starts are clamped so
    the window fits."""
    starts = [s + n if s < 0 else s for s, n in zip(p["starts"], x.shape, strict=True)]
    idx = tuple(slice(min(max(s, 0), n - k), min(max(s, 0), n - k) + k)
                for s, n, k in zip(starts, x.shape, p["sizes"], strict=True))
    return x[idx]


op("dynamic_slice", 1, KINDS,
   lambda p, x: lax.dynamic_slice(x, p["starts"], p["sizes"]), _dyn_ref, params=_dyn_param,
   smooth=True)

# ----------------------------------------------------------------------------- shapes


def _reshape_param(draw, avals: list[Aval]) -> dict:
    shape = avals[0][0]
    size = int(np.prod(shape, dtype=np.int64))
    dims = []
    rest = size
    for _ in range(draw(st.integers(0, 3))):
        divisors = [d for d in (1, 2, 3, 4, 5, 6) if rest and rest % d == 0] or [1]
        d = draw(st.sampled_from(divisors)) if size else draw(st.sampled_from([0, 1, 2]))
        dims.append(d)
        rest = rest // d if d else rest
    if size:
        dims.append(rest)
    elif 0 not in dims:
        dims.append(0)
    if draw(st.booleans()) and size:
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return {"shape": tuple(dims)}


op("reshape", 1, KINDS, lambda p, x: jnp.reshape(x, p["shape"]),
   lambda p, x: np.reshape(x, p["shape"]), params=_reshape_param, smooth=True)
op("transpose", 1, KINDS, lambda p, x: jnp.transpose(x, p["perm"]),
   lambda p, x: np.transpose(x, p["perm"]), smooth=True, valid=lambda aval: len(aval[0]) >= 2,
   params=lambda draw, avals: {"perm": tuple(draw(st.permutations(range(len(avals[0][0])))))})
op("flip", 1, KINDS, lambda p, x: jnp.flip(x, p["axis"]), lambda p, x: np.flip(x, p["axis"]),
   smooth=True, preserves=True,
   params=lambda draw, avals: {"axis": draw(st.none() | st.sampled_from(
       range(len(avals[0][0])) or [0])) if avals[0][0] else None})
op("expand_dims", 1, KINDS, lambda p, x: jnp.expand_dims(x, p["axis"]),
   lambda p, x: np.expand_dims(x, p["axis"]), smooth=True,
   params=lambda draw, avals: {"axis": draw(st.integers(-len(avals[0][0]) - 1,
                                                        len(avals[0][0])))})
op("squeeze", 1, KINDS, lambda p, x: jnp.squeeze(x), lambda p, x: np.squeeze(x), smooth=True,
   valid=lambda aval: 1 in aval[0])


def _pad_param(draw, avals: list[Aval]) -> dict:
    return {"widths": tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2)))
                            for _ in avals[0][0])}


op("pad", 1, KINDS, lambda p, x: jnp.pad(x, p["widths"]), lambda p, x: np.pad(x, p["widths"]),
   params=_pad_param, smooth=True)


def _bcast_param(draw, avals: list[Aval]) -> dict:
    shape = avals[0][0]
    lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    return {"shape": lead + tuple(draw(st.sampled_from([n, 2])) if n == 1 else n
                                  for n in shape)}


op("broadcast_to", 1, KINDS, lambda p, x: jnp.broadcast_to(x, p["shape"]),
   lambda p, x: np.broadcast_to(x, p["shape"]), params=_bcast_param, smooth=True)
def _concat_shapes(draw, aval: Aval, p: dict) -> list[tuple[int, ...]]:
    shape = list(aval[0])
    shape[p["axis"]] = draw(st.integers(0, 3))
    return [tuple(shape)]


op("concatenate", 2, KINDS, lambda p, x, y: jnp.concatenate([x, y], axis=p["axis"]),
   lambda p, x, y: np.concatenate(jax_promoted((x, y)), axis=p["axis"]), smooth=True,
   params=lambda draw, avals: {"axis": draw(st.sampled_from(range(len(avals[0][0]))))},
   shapes=_concat_shapes, valid=lambda aval: len(aval[0]) >= 1)

# ----------------------------------------------------------------------------- products


def _dot(p: dict, x, y, mod) -> Any:
    if p["form"] == "dot":
        return mod.dot(x, y)
    if p["form"] == "matmul":
        return mod.matmul(x, y)
    return mod.tensordot(x, y, axes=1 if np.ndim(x) else 0)


def _dot_param(draw, avals: list[Aval]) -> dict:
    shape = avals[0][0]
    forms = ["dot", "tensordot"] + (["matmul"] if len(shape) >= 1 else [])
    return {"form": draw(st.sampled_from(forms)), "k": draw(st.integers(0, 3)),
            "batch": draw(st.booleans())}


def _dot_shapes(draw, aval: Aval, p: dict) -> list[tuple[int, ...]]:
    shape, k = aval[0], p["k"]
    if not shape:
        return [(k,) if p["form"] != "tensordot" else ()]
    n = shape[-1]
    if p["form"] == "dot":
        return [(n,) if len(shape) == 1 or not k else (n, k)] if len(shape) <= 2 else [(n, k)]
    if p["form"] == "tensordot":
        return [(n, k)]
    if len(shape) >= 3 and p["batch"]:
        return [(*shape[:-2], n, k)]
    return [(n,) if not k else (n, k)]


op("dot", 2, "iufc", lambda p, x, y: _dot(p, x, y, jnp),
   lambda p, x, y: _dot(p, *jax_promoted((x, y)), np),
   inexact="fc", smooth=True, sums=True,
   params=_dot_param, shapes=_dot_shapes,
   valid=lambda aval: len(aval[0]) <= 3)

# the ops control-flow bodies and branches chain (output aval = input aval)
PRESERVING = {name: spec for name, spec in OPS.items() if spec.preserves}
