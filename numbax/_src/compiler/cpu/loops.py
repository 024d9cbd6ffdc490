"""CPU codegen: each loop nest becomes a readable @njit kernel module; a Python driver runs them."""
from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np

from numbax._src import core
from numbax._src.compiler import fusion
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var

NUMBAX_VERSION = "0.1.0"
PRANGE_MIN = 2**19  # smaller loops run serially: threads do not pay here (docs/performance.md)
# Full reductions run in prange chunks with 2 or more Numba threads and this many elements;
# PAR_REDUCE_THREADS (None: numba.get_num_threads() at render time) is for tests. Measured
# (docs/performance.md, bench_cpu.py --sweep): on 16 idle cores a chunked sum wins from 2**18
# elements, a sum of exp from 2**15; on the idle 2-core VM the same (sum 0.61x serial at
# 2**18, logsumexp 0.56x at 2**15) once chunk bounds are unsigned (see _render_rows).
PAR_REDUCE_MIN = 2**18
PAR_REDUCE_MIN_HEAVY = 2**15  # kernels calling fastmath exp/log/tanh/...
PAR_REDUCE_THREADS: int | None = None
PAR_REDUCE_CHUNK_MIN = 2**12  # elements per chunk at least
LANES = 16  # independent max/min accumulators per row pass (8 when the pass body is longer)
# Kernel outputs of this many bytes reuse the driver's previous buffer once the caller has
# dropped it (kernels_cpu.take): fresh pages of a large np.empty are faulted and zeroed.
POOL_MIN_BYTES = 2**23
POOL_MAX_BYTES = 2**28
# The knobs that change generated code; part of every disk-cache key.
CODEGEN_CONFIG = (("prange_min", PRANGE_MIN), ("error_model", "numpy"),
                  ("fastmath", "reduce_ops accumulators, fm Horner contract"), ("row_groups", 1),
                  ("f32_sum_acc", "float64"),
                  ("par_reduce_min", PAR_REDUCE_MIN, PAR_REDUCE_MIN_HEAVY, PAR_REDUCE_CHUNK_MIN),
                  ("lanes", LANES), ("pool_bytes", POOL_MIN_BYTES, POOL_MAX_BYTES))
_ROW_FASTMATH = ("# fastmath: only in reduction accumulators (reduce_ops): rd.add/rd.mul "
                 "{reassoc, contract}, rd.max_/rd.min_ {reassoc, nsz}; and fm.* Horner steps "
                 "{contract}")
_FASTMATH_FUNCS = frozenset({"exp", "log", "log1p", "expm1", "tanh", "logistic", "erf",
                             "erf_inv"})


# ----------------------------------------------------------------------------- value rendering


def dtype_ctor(dtype: np.dtype) -> str:
    return "np.bool_" if dtype == np.bool_ else f"np.{np.dtype(dtype).name}"


def render_scalar(value, dtype: np.dtype) -> str:
    """A constant as Python source of exactly `dtype` (no user strings: numbers only)."""
    dtype = np.dtype(dtype)
    value = np.asarray(value, dtype=dtype)[()]
    if dtype == np.bool_:
        return repr(bool(value))
    if dtype.kind in "iu":
        return f"{dtype_ctor(dtype)}({int(value)})"
    if dtype.kind == "c":
        return f"{dtype_ctor(dtype)}(complex({_float(value.real)}, {_float(value.imag)}))"
    return f"{dtype_ctor(dtype)}({_float(value)})"


def _float(x) -> str:
    x = float(x)
    if math.isnan(x):
        return "math.nan"
    if math.isinf(x):
        return "math.inf" if x > 0 else "-math.inf"
    return repr(x)


def cast(dtype: np.dtype, expr: str) -> str:
    return expr if np.dtype(dtype) == np.bool_ else f"{dtype_ctor(dtype)}({expr})"


# ----------------------------------------------------------------------------- scalar table

ScalarRule = Callable[[list[str], JaxprEqn], str]


def _fn(name: str) -> ScalarRule:
    return lambda args, eqn: f"{name}({', '.join(args)})"


def _infix(op: str) -> ScalarRule:
    return lambda args, eqn: f"({args[0]} {op} {args[1]})"


def _dtype_of(eqn: JaxprEqn, i: int = 0) -> np.dtype:
    return eqn.invars[i].aval.dtype


def _fastmath(name: str, libm: str) -> ScalarRule:
    def rule(args, eqn):
        dtype = _dtype_of(eqn)
        if dtype in (np.float32, np.float64) and name in _FASTMATH_FUNCS:
            return f"fm.{name}_{'f32' if dtype == np.float32 else 'f64'}({args[0]})"
        return f"{libm}({args[0]})"

    return rule


def _by_kind(float_rule: ScalarRule, int_rule: ScalarRule, bool_rule: ScalarRule | None = None):
    def rule(args, eqn):
        kind = _dtype_of(eqn).kind
        if kind == "b" and bool_rule is not None:
            return bool_rule(args, eqn)
        return int_rule(args, eqn) if kind in "iub" else float_rule(args, eqn)

    return rule


def _complex_or(rule: ScalarRule, complex_form: str) -> ScalarRule:
    """`rule`, or `complex_form` (operands as {0}, {1}) when the operands are complex."""
    return lambda args, eqn: (complex_form.format(*args) if _dtype_of(eqn).kind == "c"
                              else rule(args, eqn))


def _select_n(args, eqn):
    which, cases = args[0], args[1:]
    if len(cases) == 1:
        return cases[0]
    if _dtype_of(eqn).kind == "b":
        return f"({cases[1]} if {which} else {cases[0]})"
    expr = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        expr = f"({cases[k]} if {which} <= {k} else {expr})"
    return expr


def _convert(args, eqn):
    src, dst = _dtype_of(eqn), np.dtype(eqn.params["new_dtype"])
    if dst == np.bool_:
        return f"({args[0]} != 0)"
    if src.kind == "c" and dst.kind != "c":
        return f"{args[0]}.real"
    return args[0]


def _integer_pow(args, eqn):
    y = eqn.params["y"]
    if y == 0:
        return f"({args[0]} - {args[0]} + 1)"
    if y in (1, 2, 3):
        return "(" + " * ".join([args[0]] * y) + ")"
    if y > 0:
        return f"rt.ipow({args[0]}, {y})"
    return f"(1.0 / rt.ipow({args[0]}, {-y}))"


def _round(args, eqn):
    if eqn.params.get("rounding_method", 0) == 1:
        return f"np.rint({args[0]})"
    return f"rt.round_away({args[0]})"


def _shift(kind: str) -> ScalarRule:
    # Over-wide shift amounts are defined (as numpy's and XLA's are), never LLVM poison.
    def rule(args, eqn):
        dtype = _dtype_of(eqn)
        bits = dtype.itemsize * 8
        x, y = args
        if kind == "left":
            return f"rt.shift_left({x}, {y}, {bits})"
        if kind == "arithmetic":
            return f"rt.shift_right_arithmetic({x}, {y}, {bits}, {dtype.kind == 'u'})"
        unsigned = f"np.uint{bits}"
        return f"rt.shift_right_logical({unsigned}({x}), {unsigned}({y}), {bits})"

    return rule


SCALAR_RULES: dict[str, ScalarRule] = {
    "add": _by_kind(_infix("+"), _infix("+"), _infix("|")),
    "add_any": _by_kind(_infix("+"), _infix("+"), _infix("|")),
    "sub": _infix("-"),
    "mul": _by_kind(_infix("*"), _infix("*"), _infix("&")),
    "div": _by_kind(_complex_or(_infix("/"), "rt.complex_div({0}, {1})"), _fn("rt.cdiv")),
    "rem": _by_kind(_fn("np.fmod"), _fn("rt.crem")),
    "pow": _fn("np.power"),
    "max": _by_kind(_fn("rt.fmax"), _fn("max")),
    "min": _by_kind(_fn("rt.fmin"), _fn("min")),
    "atan2": _fn("np.arctan2"),
    "and": _infix("&"),
    "or": _infix("|"),
    "xor": _infix("^"),
    "shift_left": _shift("left"),
    "shift_right_arithmetic": _shift("arithmetic"),
    "shift_right_logical": _shift("logical"),
    "eq": _infix("=="),
    "ne": _infix("!="),
    "lt": _complex_or(_infix("<"), "rt.complex_lt({0}, {1})"),
    "le": _complex_or(_infix("<="), "rt.complex_le({0}, {1})"),
    "gt": _complex_or(_infix(">"), "rt.complex_lt({1}, {0})"),
    "ge": _complex_or(_infix(">="), "rt.complex_le({1}, {0})"),
    "neg": lambda a, e: f"(-{a[0]})",
    "sign": _fn("np.sign"),
    "floor": _fn("np.floor"),
    "ceil": _fn("np.ceil"),
    "is_finite": _fn("np.isfinite"),
    "exp": _fastmath("exp", "np.exp"),
    "exp2": _fn("np.exp2"),
    "log": _fastmath("log", "np.log"),
    "log1p": _fastmath("log1p", "np.log1p"),
    "expm1": _fastmath("expm1", "np.expm1"),
    "tanh": _fastmath("tanh", "np.tanh"),
    "logistic": _fastmath("logistic", "rt.logistic"),
    "erf": _fastmath("erf", "math.erf"),
    "erfc": _fn("math.erfc"),
    "erf_inv": _fastmath("erf_inv", "unused"),  # float32/float64 only (scalar_supported)
    "lgamma": _fn("math.lgamma"),
    "sin": _fn("np.sin"),
    "cos": _fn("np.cos"),
    "tan": _fn("np.tan"),
    "asin": _fn("np.arcsin"),
    "acos": _fn("np.arccos"),
    "atan": _fn("np.arctan"),
    "sinh": _fn("np.sinh"),
    "cosh": _fn("np.cosh"),
    "asinh": _fn("np.arcsinh"),
    "acosh": _fn("np.arccosh"),
    "atanh": _fn("np.arctanh"),
    "sqrt": _fn("np.sqrt"),
    "rsqrt": lambda a, e: f"(1.0 / np.sqrt({a[0]}))",
    "cbrt": _fn("np.cbrt"),
    "abs": _fn("abs"),
    "real": lambda a, e: f"{a[0]}.real",
    "imag": lambda a, e: f"{a[0]}.imag",
    "conj": _fn("np.conj"),
    "not": _by_kind(None, lambda a, e: f"(~{a[0]})", lambda a, e: f"(not {a[0]})"),
    "square": lambda a, e: f"({a[0]} * {a[0]})",
    "round": _round,
    "integer_pow": _integer_pow,
    "select_n": _select_n,
    "clamp": _fn("rt.clamp"),
    "convert_element_type": _convert,
    "bitcast_convert_type": lambda a, e: (  # same width only (scalar_supported)
        f"{cast(e.invars[0].aval.dtype, a[0])}.view({dtype_ctor(e.params['new_dtype'])})"),
    "stop_gradient": lambda a, e: a[0],
}
# Complex logistic etc. have no scalar form; keep the table and the fusion class in step.
_FLOAT_ONLY = frozenset({"logistic", "erf", "erfc", "lgamma", "erf_inv"})

_REDUCE = {  # name: (init for the dtype, update template)
    "reduce_sum": (lambda dt: 0, "{acc} = {acc} + {v}", "{acc} += {v}"),
    "reduce_prod": (lambda dt: 1, "{acc} = {acc} * {v}", "{acc} *= {v}"),
    "reduce_max": (lambda dt: _lowest(dt, True), "{acc} = {fmax}({acc}, {v})", None),
    "reduce_min": (lambda dt: _lowest(dt, False), "{acc} = {fmin}({acc}, {v})", None),
    "reduce_and": (lambda dt: True, "{acc} = {acc} & {v}", None),
    "reduce_or": (lambda dt: False, "{acc} = {acc} | {v}", None),
}


def _lowest(dtype: np.dtype, for_max: bool):
    if dtype == np.bool_:
        return not for_max
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if for_max else info.max
    return -np.inf if for_max else np.inf


def _acc_dtype(name: str, dtype: np.dtype) -> np.dtype:
    if name in ("reduce_sum", "reduce_prod"):
        if dtype == np.float32:
            return np.dtype(np.float64)
        if dtype.kind in "iu" and dtype.itemsize < 8:
            return np.dtype(np.int64 if dtype.kind == "i" else np.uint64)
    return dtype


def scalar_supported(eqn: JaxprEqn) -> bool:
    """Whether the equation can join a loop nest (the fusion class and a scalar form)."""
    name = eqn.primitive.name
    if name in fusion.BROADCAST and eqn.outvars[0].aval.ndim == 0:
        return False
    if name in fusion.REDUCTIONS or name in fusion.BROADCAST:
        return any(x.aval.dtype.kind != "c" for x in eqn.invars)
    if name in fusion.SOURCES:  # iota: the loop index along its dimension
        return eqn.outvars[0].aval.dtype.kind in "iuf"
    if name == "bitcast_convert_type":  # a scalar view between same-width numbers
        src, dst = eqn.invars[0].aval.dtype, np.dtype(eqn.params["new_dtype"])
        return src.itemsize == dst.itemsize and src.kind in "iuf" and dst.kind in "iuf"
    if name not in SCALAR_RULES:
        return False
    if name == "erf_inv":  # only fastmath's; float16 runs scipy's in the driver
        return eqn.invars[0].aval.dtype in (np.float32, np.float64)
    if name in _FLOAT_ONLY or name in ("max", "min", "clamp", "rem", "sign"):
        return all(x.aval.dtype.kind != "c" for x in eqn.invars)
    return True


# ----------------------------------------------------------------------------- loop nests


class _Kernel:
    """Naming state while one loop nest is rendered."""

    def __init__(self, nest: fusion.LoopNest) -> None:
        self.nest = nest
        self.names: dict[Var, str] = {}
        self.consts: list[str] = []
        self.temps = 0
        self.pp_names = core.PrintNames()
        for k, v in enumerate(nest.inputs):
            self.names[v] = f"a{k}"
        self.out_names = {v: f"o{k}" for k, v in enumerate(nest.outputs)}
        sub = Jaxpr([], nest.inputs, nest.eqns, nest.outputs)
        self.header = _header(sub, _loop_kind(nest)[0], self.pp_names)

    def const(self, lit: Literal) -> str:
        text = render_scalar(lit.val, lit.aval.dtype)
        name = f"c{len(self.consts)}"
        self.consts.append(f"{name} = {text}")
        return name

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps - 1}"

    def comment(self, eqn: JaxprEqn) -> str:
        return core.pp_eqn(eqn, self.pp_names, 0)


def _index(idx: list[str]) -> str:
    return ", ".join(idx) if idx else "()"


def _store_index(idx: list[str]) -> str:
    """Like _index, for assignments: Numba types `o[...] = v` on 0-d arrays, not `o[()] = v`."""
    return ", ".join(idx) if idx else "..."


def _bcast_index(eqn: JaxprEqn, idx: list[str]) -> str:
    x = eqn.invars[0]
    shape = eqn.params["shape"]
    parts = []
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        parts.append("0" if x.aval.shape[i] == 1 and shape[d] != 1 else idx[d])
    return _index(parts)


def _iota_index(eqn: JaxprEqn, idx: list[str], flat: bool) -> str:
    """The loop's index along iota's dimension (iota's shape is the nest's, fusion._fits); a
    flattened loop divides its one index back into that dimension's."""
    shape, dim = eqn.params["shape"], eqn.params["dimension"]
    if not flat:
        return idx[dim]
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    index = idx[0] if inner == 1 else f"({idx[0]} // {inner})"
    return index if dim == 0 else f"({index} % {shape[dim]})"


def _body(k: _Kernel, idx: list[str], flat: bool, accs: dict[Var, str], lines: list[str],
          pad: str, par_reduce: bool, eqns: list[JaxprEqn] | None = None,
          seed: dict[Var, str] | None = None, no_store: frozenset = frozenset(),
          nans: dict[Var, str] | None = None,
          stash: dict[Var, str] | None = None) -> dict[Var, str]:
    """One line per fused equation (with the equation as a comment), inside the loops.

    `seed` gives values already computed as scalars (per-row results of earlier passes),
    `no_store` the recomputed equations whose outputs an earlier pass stored, `nans` the
    NaN flags of vectorised max/min accumulators (row passes: updates go through `rd.*`), and
    `stash` values also stored into an output's buffer (a later pass reads them back).
    Returns the scalar names of the equations' values."""
    nest = k.nest
    full = _index(idx)
    value: dict[Var, str] = dict(seed or {})
    shape_rank = len(nest.shape)

    def read(x) -> str:
        if isinstance(x, Literal):
            return k.const(x)
        if x in value:
            return value[x]
        name = k.names[x]
        if x.aval.ndim == 0 and shape_rank > 0:
            return f"{name}s"  # loaded once before the loops
        return f"{name}[{full}]"

    for eqn in nest.eqns if eqns is None else eqns:
        name = eqn.primitive.name
        out = eqn.outvars[0]
        comment = k.comment(eqn)
        if name in fusion.BROADCAST:
            x = eqn.invars[0]
            expr = read(x) if isinstance(x, Literal) or x.aval.ndim == 0 or x in value else (
                f"{k.names[x]}[{_bcast_index(eqn, idx)}]")
        elif name in fusion.REDUCTIONS:
            acc = accs[out]
            v = read(eqn.invars[0])
            if nans is not None:
                lines.extend(pad + u for u in _row_update(name, acc, v, out, nans))
                lines[-1] += f"  # {comment}"
                continue
            dt = eqn.invars[0].aval.dtype
            update = _REDUCE[name][2] if par_reduce else _REDUCE[name][1]
            fmax, fmin = ("rt.fmax", "rt.fmin") if dt.kind in "fc" else ("max", "min")
            lines.append(pad + update.format(acc=acc, v=v, fmax=fmax, fmin=fmin)
                         + f"  # {comment}")
            continue
        elif name in fusion.SOURCES:
            expr = cast(out.aval.dtype, _iota_index(eqn, idx, flat))
        else:
            expr = SCALAR_RULES[name]([read(x) for x in eqn.invars], eqn)
            if name not in ("eq", "ne", "lt", "le", "gt", "ge", "is_finite") and not (
                    out.aval.dtype == np.float64
                    and all(x.aval.dtype == np.float64 for x in eqn.invars)):
                expr = cast(out.aval.dtype, expr)
        t = k.temp()
        value[out] = t
        lines.append(f"{pad}{t} = {expr}  # {comment}")
        if out in k.out_names and out not in no_store:
            target = f"{k.out_names[out]}[{full if idx else '...'}]"
            lines.append(f"{pad}{target} = {t}")
        if stash and out in stash:
            lines.append(f"{pad}{stash[out]}[{full}] = {t}  # kept for the last pass")
    return value


# Row-pass accumulator updates: sums and products through reassociating helpers (vectorised
# lanes), float max/min through NaN-ignoring selects plus a NaN flag (NaN still propagates).
_ROW_UPDATE = {
    "reduce_sum": "{acc} = rd.add({acc}, {v})",
    "reduce_prod": "{acc} = rd.mul({acc}, {v})",
    "reduce_max": "{acc} = rd.max_({acc}, {v})",
    "reduce_min": "{acc} = rd.min_({acc}, {v})",
}


def _row_update(name: str, acc: str, v: str, out: Var, nans: dict[Var, str]) -> list[str]:
    if out in nans:
        return [f"{nans[out]} = {nans[out]} | ({v} != {v})",
                _ROW_UPDATE[name].format(acc=acc, v=v)]
    if name in ("reduce_sum", "reduce_prod") and out.aval.dtype.kind in "fc":
        return [_ROW_UPDATE[name].format(acc=acc, v=v)]
    fmax, fmin = "max", "min"
    return [_REDUCE[name][1].format(acc=acc, v=v, fmax=fmax, fmin=fmin)]


def _loop_kind(nest: fusion.LoopNest) -> tuple[bool, bool]:
    """(parallel outer loop, parallel scalar reduction) from the static sizes."""
    size = int(np.prod(nest.shape, dtype=np.int64))
    if size < PRANGE_MIN or not nest.shape:
        return False, False
    axes = nest.reduce_axes or ()
    if 0 not in axes:
        return True, False
    full = len(axes) == len(nest.shape)
    red_names = {e.primitive.name for e in nest.eqns if e.primitive.name in fusion.REDUCTIONS}
    if full and red_names <= {"reduce_sum", "reduce_prod"}:
        return True, True
    return False, False


def render_loop(nest: fusion.LoopNest) -> tuple[str, bool]:
    """The source of one kernel module, and whether it runs a parallel loop."""
    k = _Kernel(nest)
    if fusion._trailing(nest) is not None:
        return _render_rows(k, nest)
    shape = nest.shape
    rank = len(shape)
    axes = nest.reduce_axes
    parallel, par_reduce = _loop_kind(nest)
    flat = (axes is None and rank > 1 and not any(
        e.primitive.name in fusion.BROADCAST for e in nest.eqns)
        and all(v.aval.ndim in (0, rank) for v in nest.inputs))
    trailing = axes is not None and axes == tuple(range(rank - len(axes), rank))
    lines: list[str] = []
    pad = "    "
    if rank:
        lines.extend(f"{pad}{k.names[v]}s = {k.names[v]}[()]" for v in nest.inputs
                     if v.aval.ndim == 0)
    nest.flat_size = None
    if flat:  # the driver passes 1-d views: Numba vectorises those loops, not reshapes
        size = int(np.prod(shape, dtype=np.int64))
        nest.flat_size = size
        loop_shape = (size,)
    else:
        loop_shape = shape
    idx = [f"i{d}" for d in range(len(loop_shape))]
    reductions = [e for e in nest.eqns if e.primitive.name in fusion.REDUCTIONS]
    accs = {e.outvars[0]: f"acc{j}" for j, e in enumerate(reductions)}
    kept = rank - len(axes) if trailing else len(loop_shape)
    if axes is not None and not trailing:
        _render_init_outputs(k, reductions, lines, pad)
        accs = {e.outvars[0]: _general_target(k, e, idx) for e in reductions}
    body_pad = pad
    for d, n in enumerate(loop_shape):
        if trailing and d == kept:
            lines.extend(_acc_inits(reductions, accs, body_pad))
        loop = "prange" if d == 0 and parallel else "range"
        lines.append(f"{body_pad}for {idx[d]} in {loop}({n}):")
        body_pad += "    "
    if trailing and kept == len(loop_shape):
        lines.extend(_acc_inits(reductions, accs, body_pad))
    _body(k, idx, flat, accs, lines, body_pad, par_reduce)
    if trailing:
        store_pad = pad + "    " * kept
        for e in reductions:
            out = e.outvars[0]
            if out in k.out_names:
                target = f"{k.out_names[out]}[{_store_index(idx[:kept])}]"
                lines.append(f"{store_pad}{target} = {cast(out.aval.dtype, accs[out])}")
    params = ", ".join([*k.names.values(), *k.out_names.values()])
    head = k.header
    deco = _decorator(parallel)
    consts = "\n".join(k.consts)
    src = (f"{head}\n{consts}\n\n\n{deco}\ndef kernel({params}):\n" + "\n".join(lines) + "\n")
    return src, parallel


def _render_rows(k: _Kernel, nest: fusion.LoopNest) -> tuple[str, bool]:
    """A reduction over trailing axes, and the passes fused after it (fusion.fuse_rows): an
    outer loop over the kept axes (prange when large), then per outer index one inner loop nest
    per pass; per-row results stay scalars, full-size values of earlier passes are recomputed,
    except exp/log-heavy ones the last pass needs, which an output row carries (_stash_plan):
    softmax reads its row twice, computes exp once and writes the row twice (in cache).

    Trailing axes that every access indexes in full are flattened into one loop (the driver
    passes reshaped views); passes holding max/min (or integer/bool) accumulators are unrolled
    into LANES independent accumulators (LLVM does not vectorise those selects); full
    reductions of at least PAR_REDUCE_MIN elements run in chunks under prange when Numba has
    more than 2 threads, with per-chunk partials combined serially."""
    kept = fusion._trailing(nest)
    shape = nest.shape
    nest.flat_shape = None
    if _rows_flattenable(nest, kept):
        shape = (*shape[:kept], int(np.prod(shape[kept:], dtype=np.int64)))
        nest.flat_shape = shape
    chunks = _reduce_chunks(nest, kept, shape)
    parallel = (_loop_kind(nest)[0] and kept > 0) or chunks > 1
    passes = nest.passes or [("row", list(nest.eqns))]
    idx = [f"i{d}" for d in range(len(shape))]
    pad = "    "
    lines = [f"{pad}{k.names[v]}s = {k.names[v]}[()]" for v in nest.inputs if v.aval.ndim == 0]
    for d in range(kept):
        loop = "prange" if d == 0 and parallel else "range"
        lines.append(f"{pad}for {idx[d]} in {loop}({shape[d]}):")
        pad += "    "
    if chunks > 1:
        n = shape[-1]
        lines.append(f"{pad}nchunk = {chunks}")
        lines.append(f"{pad}chunk = {-(-n // chunks)}")
    seed: dict[Var, str] = {}
    row_defs: list[JaxprEqn] = []  # elementwise equations of earlier row passes (recomputed)
    n_acc = 0
    stash, stash_pass = _stash_plan(k, passes)
    for p, (kind, eqns) in enumerate(passes):
        if kind == "outer":
            values = _body(k, idx[:kept], False, {}, lines, pad, False, eqns=eqns, seed=seed)
            seed.update({e.outvars[0]: values[e.outvars[0]] for e in eqns})
            continue
        reductions = [e for e in eqns if e.primitive.name in fusion.REDUCTIONS]
        accs = {e.outvars[0]: f"acc{n_acc + j}" for j, e in enumerate(reductions)}
        nans = {e.outvars[0]: f"nan{n_acc + j}" for j, e in enumerate(reductions)
                if e.primitive.name in ("reduce_max", "reduce_min")
                and e.invars[0].aval.dtype.kind == "f"}
        n_acc += len(reductions)
        store_here = {v: o for v, o in stash.items() if stash_pass[v] == p}
        reload = []  # the last pass loads the kept values before any store overwrites them
        if p == len(passes) - 1 and stash:
            reload = [f"sv{j} = {o}[{_index(idx)}]" for j, o in enumerate(stash.values())]
            seed = {**seed, **{v: f"sv{j}" for j, v in enumerate(stash)}}
        again = _recompute(eqns, row_defs, seed)
        lanes = _lanes(reductions, len(again) + len(eqns))
        if shape[-1] < 2 * lanes and chunks <= 1:
            lanes = 1
        ppad = pad
        if chunks > 1:
            for e in reductions:
                acc_dt = _acc_dtype(e.primitive.name, e.invars[0].aval.dtype)
                lines.append(f"{pad}p{accs[e.outvars[0]]} = np.empty({chunks}, "
                             f"{dtype_ctor(acc_dt)})")
            lines.extend(f"{pad}p{f} = np.empty({chunks}, np.bool_)" for f in nans.values())
            lines.append(f"{pad}for ic in prange(nchunk):")
            ppad = pad + "    "
            # unsigned bounds: with a signed start Numba's negative-index wraparound stays in
            # the loop and blocks vectorisation (a 1e7 sum: 5.9 ms chunked vs 1.4 ms, 2 cores)
            lines.append(f"{ppad}lo = np.uint64(min(ic * chunk, {shape[-1]}))")
            lines.append(f"{ppad}hi = np.uint64(min(ic * chunk + chunk, {shape[-1]}))")
        lane_accs = [accs] + [{v: f"{a}_{j}" for v, a in accs.items()} for j in range(1, lanes)]
        for la in lane_accs:
            lines.extend(_acc_inits(reductions, la, ppad))
        lines.extend(f"{ppad}{f} = False" for f in nans.values())
        inner = ppad
        last = len(shape) - 1
        for d in range(kept, last):
            lines.append(f"{inner}for {idx[d]} in range({shape[d]}):")
            inner += "    "
        lo, hi = ("lo", "hi") if chunks > 1 else ("0", str(shape[-1]))
        no_store = frozenset(e.outvars[0] for e in again)
        if lanes > 1:
            # chunk bounds are uint64: keep the arithmetic unsigned (uint64 + int64 is float)
            step = f"np.uint64({lanes})" if chunks > 1 else str(lanes)
            stop = (f"{lo} + ({hi} - {lo}) // {step} * {step}" if chunks > 1
                    else str(shape[-1] // lanes * lanes))
            lines.append(f"{inner}for {idx[last]} in range({lo}, {stop}, {step}):")
            for j, la in enumerate(lane_accs):
                off = f"np.uint64({j})" if chunks > 1 else str(j)
                lane_idx = [*idx[:last], f"({idx[last]} + {off})" if j else idx[last]]
                _body(k, lane_idx, False, la, lines, inner + "    ", False, eqns=again + eqns,
                      seed=seed, no_store=no_store, nans=nans, stash=store_here)
            lo = stop
        if lo != hi:
            bounds = hi if lo == "0" else f"{lo}, {hi}"
            lines.append(f"{inner}for {idx[last]} in range({bounds}):")
            lines.extend(f"{inner}    {line}" for line in reload)
            _body(k, idx, False, accs, lines, inner + "    ", False, eqns=again + eqns,
                  seed=seed, no_store=no_store, nans=nans, stash=store_here)
        for la in lane_accs[1:]:  # tree-free serial combine of the lanes into lane 0
            for e in reductions:
                out = e.outvars[0]
                lines.append(ppad + _combine(e, accs[out], la[out]))
        final = accs
        if chunks > 1:
            for e in reductions:
                a = accs[e.outvars[0]]
                lines.append(f"{ppad}p{a}[ic] = {a}")
            lines.extend(f"{ppad}p{f}[ic] = {f}" for f in nans.values())
            final = {v: f"{a}c" for v, a in accs.items()}
            lines.extend(_acc_inits(reductions, final, pad))
            lines.append(f"{pad}for ic in range(nchunk):")
            for e in reductions:
                out = e.outvars[0]
                lines.append(pad + "    " + _combine(e, final[out], f"p{accs[out]}[ic]"))
            nans_c = {v: f"{f}c" for v, f in nans.items()}
            lines[-len(reductions) - 1:-len(reductions) - 1] = [
                f"{pad}{f} = False" for f in nans_c.values()]
            lines.extend(f"{pad}    {nans_c[v]} = {nans_c[v]} | p{f}[ic]"
                         for v, f in nans.items())
            nans = nans_c
        for e in reductions:
            out = e.outvars[0]
            r = f"r{len(seed)}"
            value = cast(out.aval.dtype, final[out])
            if out in nans:
                value = f"{value} if not {nans[out]} else {render_scalar(np.nan, out.aval.dtype)}"
            lines.append(f"{pad}{r} = {value}")
            seed[out] = r
            if out in k.out_names:
                lines.append(f"{pad}{k.out_names[out]}[{_store_index(idx[:kept])}] = {r}")
        row_defs.extend(e for e in eqns if e.primitive.name not in fusion.REDUCTIONS)
    params = ", ".join([*k.names.values(), *k.out_names.values()])
    deco = _decorator(parallel)
    consts = "\n".join(k.consts)
    first, rest = k.header.split("\n", 1)
    notes = _ROW_FASTMATH
    if chunks > 1:
        notes += f"\n# parallel full reduction: {chunks} chunks under prange, partials combined"
    src = (f"{first}\n{notes}\n{rest}\n{consts}\n\n\n{deco}\ndef kernel({params}):\n"
           + "\n".join(lines) + "\n")
    return src, parallel


def _stash_plan(k: _Kernel, passes: list) -> tuple[dict[Var, str], dict[Var, int]]:
    """Full-size values the last row pass would recompute through exp/log/... (softmax's
    `exp(x - max)`, recomputed to divide by the sum) that an output of that pass can carry
    instead: the last earlier pass computing one also stores it in the output's row (same
    shape and dtype; in cache), and the last pass reads it back rather than recomputing it.
    Only for a last pass without reductions. Returns ({value: output name}, {value: pass})."""
    kind_f, eqns_f = passes[-1]
    if len(passes) < 2 or kind_f != "row" or any(
            e.primitive.name in fusion.REDUCTIONS for e in eqns_f):
        return {}, {}
    seed: set[Var] = set()
    row_defs: list[JaxprEqn] = []
    computed_in: dict[Var, int] = {}
    for p, (kind, eqns) in enumerate(passes[:-1]):
        if kind == "outer":
            seed.update(e.outvars[0] for e in eqns)
            continue
        for e in _recompute(eqns, row_defs, seed) + eqns:
            if e.primitive.name not in fusion.REDUCTIONS:
                computed_in[e.outvars[0]] = p
        seed.update(e.outvars[0] for e in eqns if e.primitive.name in fusion.REDUCTIONS)
        row_defs.extend(e for e in eqns if e.primitive.name not in fusion.REDUCTIONS)
    defs = {e.outvars[0]: e for e in row_defs}
    read_f = {x for e in eqns_f for x in e.invars if isinstance(x, Var)}
    outs_f = [e.outvars[0] for e in eqns_f if e.outvars[0] in k.out_names]
    plan: dict[Var, str] = {}
    for e in _recompute(eqns_f, row_defs, seed):
        v = e.outvars[0]
        if v not in read_f or v in k.out_names or not _heavy(v, defs, seed):
            continue
        free = [o for o in outs_f if k.out_names[o] not in plan.values()
                and o.aval.shape == v.aval.shape and o.aval.dtype == v.aval.dtype]
        if free:
            plan[v] = k.out_names[free[0]]
    return plan, {v: computed_in[v] for v in plan}


def _heavy(v: Var, defs: dict[Var, JaxprEqn], seed: set) -> bool:
    """Whether recomputing `v` from the row's inputs calls an exp/log/... function."""
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if not isinstance(x, Var) or x in seen or x in seed or x not in defs:
            continue
        seen.add(x)
        if defs[x].primitive.name in _FASTMATH_FUNCS:
            return True
        stack.extend(defs[x].invars)
    return False


def _rows_flattenable(nest: fusion.LoopNest, kept: int) -> bool:
    """Whether the trailing (reduced) axes can run as one flat loop: more than one of them,
    and no broadcast reads an array along them (every other access uses the full index)."""
    if len(nest.shape) - kept < 2:
        return False
    for e in nest.eqns:
        if e.primitive.name in fusion.BROADCAST:
            x = e.invars[0]
            if isinstance(x, Literal) or x.aval.ndim == 0:
                continue
            if any(d >= kept for d in e.params["broadcast_dimensions"]):
                return False
    return True


def _reduce_threads() -> int:
    return PAR_REDUCE_THREADS if PAR_REDUCE_THREADS is not None else numba.get_num_threads()


def _reduce_chunks(nest: fusion.LoopNest, kept: int, shape: tuple[int, ...]) -> int:
    """How many prange chunks a full reduction runs in (1: serial). Only with 2 or more Numba
    threads, only for one flat loop of at least PAR_REDUCE_MIN elements (PAR_REDUCE_MIN_HEAVY
    with exp/log/...), in up to 2 chunks per thread of at least PAR_REDUCE_CHUNK_MIN
    elements."""
    threads = _reduce_threads()
    heavy = any(e.primitive.name in _FASTMATH_FUNCS for e in nest.eqns)
    if kept != 0 or len(shape) != 1 or threads < 2 or shape[0] < (
            PAR_REDUCE_MIN_HEAVY if heavy else PAR_REDUCE_MIN):
        return 1
    return max(1, min(2 * threads, shape[0] // PAR_REDUCE_CHUNK_MIN))


def _lanes(reductions: list[JaxprEqn], n_eqns: int) -> int:
    """Independent accumulators for a pass: sums/products of floats vectorise through rd.add
    (1 lane); max/min selects and integer/bool accumulators do not, so they get LANES."""
    plain = all(e.primitive.name in ("reduce_sum", "reduce_prod")
                and e.invars[0].aval.dtype.kind in "fc" for e in reductions)
    if plain or not reductions:
        return 1
    return LANES if n_eqns <= 3 else max(LANES // 2, 1)


def _combine(e: JaxprEqn, acc: str, other: str) -> str:
    """`acc` folded with another partial accumulator of the same reduction."""
    name = e.primitive.name
    dt = e.invars[0].aval.dtype
    if name in _ROW_UPDATE and dt.kind in "fc":
        return _ROW_UPDATE[name].format(acc=acc, v=other)
    return _REDUCE[name][1].format(acc=acc, v=other, fmax="max", fmin="min")


def _recompute(eqns: list[JaxprEqn], row_defs: list[JaxprEqn], seed) -> list[JaxprEqn]:
    """The equations of earlier row passes that `eqns` need again, in program order."""
    defs = {e.outvars[0]: e for e in row_defs}
    need: set[Var] = set()
    stack = [x for e in eqns for x in e.invars]
    while stack:
        x = stack.pop()
        if isinstance(x, Var) and x in defs and x not in need and x not in seed:
            need.add(x)
            stack.extend(defs[x].invars)
    return [e for e in row_defs if e.outvars[0] in need]


def _acc_inits(reductions, accs, pad) -> list[str]:
    out = []
    for e in reductions:
        dt = e.invars[0].aval.dtype
        acc_dt = _acc_dtype(e.primitive.name, dt)
        init = render_scalar(_REDUCE[e.primitive.name][0](dt), acc_dt)
        out.append(f"{pad}{accs[e.outvars[0]]} = {init}")
    return out


def _general_target(k: _Kernel, eqn: JaxprEqn, idx: list[str]) -> str:
    axes = eqn.params["axes"]
    kept = [i for d, i in enumerate(idx) if d not in axes]
    return f"{k.out_names[eqn.outvars[0]]}[{_store_index(kept)}]"


def _render_init_outputs(k: _Kernel, reductions, lines, pad) -> None:
    for e in reductions:
        dt = e.invars[0].aval.dtype
        init = render_scalar(_REDUCE[e.primitive.name][0](dt), e.outvars[0].aval.dtype)
        lines.append(f"{pad}{k.out_names[e.outvars[0]]}[...] = {init}")


def _header(jaxpr: Jaxpr, parallel: bool, names: core.PrintNames) -> str:
    """Versions, backend and the jaxpr implemented (printed with the names the comments use)."""
    text = core.pp_jaxpr_lines(jaxpr, names, 0, inline_ok=True).replace("\n", "\n# ")
    return "\n".join([
        f"# numbax {NUMBAX_VERSION} | numba {numba.__version__} | cpu | parallel={parallel}",
        f"# {text}",
        "import math  # noqa: F401",
        "",
        "import numpy as np  # noqa: F401",
        "from numba import njit, prange  # noqa: F401",
        "",
        "from numbax._src.compiler.cpu.runtime import fastmath as fm  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import reductions as rd  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import scalars as rt  # noqa: F401",
        "",
        'CACHE = "__file__" in globals()  # Numba caches only modules loaded from a file',
    ])


def _decorator(parallel: bool) -> str:
    """Kernels are called from the Python driver only, never as first-class functions inside
    Numba code, so they need no cfunc wrapper (skipping it saves ~5 ms of LLVM per kernel)."""
    return (f"@njit(parallel={parallel}, error_model=\"numpy\", cache=CACHE, fastmath=False, "
            "no_cfunc_wrapper=True)")
