"""Control flow under jit: one cond/while/scan equation becomes one @njit function.

The sub-jaxprs are rendered as NumPy array expressions that Numba's nopython mode supports
(a table keyed by primitive), with native `if`/`while`/`for` and, for a scan without carry
(vmap's `map`), a `prange` over examples. An equation holding a primitive without a rule
falls back to a Python loop in the driver that calls the sub-jaxprs compiled on their own.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.compiler import fusion
from numbax._src.compiler.cpu import loops as codegen_cpu
from numbax._src.compiler.cpu.loops import SCALAR_RULES, cast, dtype_ctor, render_scalar
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var

CONTROL_FLOW = frozenset({"cond", "while", "scan"})
_WHILE_TRIPS = 64  # a while loop's assumed trip count when sizing the work of a map


@dataclass
class NopythonCall(fusion.LibraryCall):
    """A control-flow equation run by one generated @njit kernel, or by a Python fallback."""

    module: str | None = None
    fallback: Callable | None = None
    fallback_name: str | None = None

    family = "nopy"


class Unsupported(Exception):
    """A primitive (or form of one) the nopython renderer has no rule for."""


# ----------------------------------------------------------------------------- array rules


def _c(eqn: JaxprEqn, value) -> str:
    return render_scalar(value, eqn.outvars[0].aval.dtype)


def _infix(op: str, bool_op: str | None = None):
    def rule(a, eqn):
        if eqn.invars[0].aval.dtype == np.bool_:
            if bool_op is None:
                raise Unsupported(eqn.primitive.name)
            return f"({a[0]} {bool_op} {a[1]})"
        return f"({a[0]} {op} {a[1]})"

    return rule


def _np(name: str, kinds: str = "fc"):
    def rule(a, eqn):
        if eqn.invars[0].aval.dtype.kind not in kinds:
            raise Unsupported(eqn.primitive.name)
        return f"{name}({', '.join(a)})"

    return rule


def _div(a, eqn):
    if eqn.invars[0].aval.dtype.kind not in "fc":
        raise Unsupported("div")
    return f"({a[0]} / {a[1]})"


def _integer_pow(a, eqn):
    y = eqn.params["y"]
    if 1 <= y <= 4:
        return "(" + " * ".join([a[0]] * y) + ")"
    return f"np.power({a[0]}, {_c(eqn, y)})"


def _not(a, eqn):
    return f"np.logical_not({a[0]})" if eqn.invars[0].aval.dtype == np.bool_ else f"(~{a[0]})"


def _convert(a, eqn):
    dst = np.dtype(eqn.params["new_dtype"])
    if dst == np.bool_:
        return f"({a[0]} != 0)"
    return f"{a[0]}.astype({dtype_ctor(dst)})"


def _full(eqn: JaxprEqn, x: str) -> str:
    return f"np.full({eqn.outvars[0].aval.shape}, {x})"


def _select_n(a, eqn):
    shape = eqn.outvars[0].aval.shape
    which, cases = a[0], [c if x.aval.ndim else f"np.full({shape}, {c})"
                          for c, x in zip(a[1:], eqn.invars[1:], strict=True)]
    if eqn.invars[0].aval.ndim == 0:
        which = f"np.full({shape}, {which})"
    if len(cases) == 1:
        return cases[0]
    if eqn.invars[0].aval.dtype == np.bool_:
        return f"np.where({which}, {cases[1]}, {cases[0]})"
    expr = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        expr = f"np.where({which} <= {k}, {cases[k]}, {expr})"
    return expr


def _broadcast(a, eqn):
    x, shape = eqn.invars[0], eqn.params["shape"]
    if x.aval.ndim == 0:
        return _full(eqn, a[0])
    expanded = [1] * len(shape)
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        expanded[d] = x.aval.shape[i]
    return f"np.broadcast_to({_contig(a[0])}.reshape({tuple(expanded)}), {shape}).copy()"


def _contig(x: str) -> str:
    return f"np.ascontiguousarray({x})"


def _reshape(a, eqn):
    x, out = eqn.invars[0].aval, eqn.outvars[0].aval
    if out.ndim == 0:
        return a[0] if x.ndim == 0 else f"{_contig(a[0])}.reshape(-1)[0]"
    if x.ndim == 0:
        return _full(eqn, a[0])
    return f"{_contig(a[0])}.reshape({out.shape}).copy()"


def _transpose(a, eqn):
    return _contig(f"{a[0]}.transpose({eqn.params['permutation']})")


def _reduce(fn: str, partial: bool):
    def rule(a, eqn):
        x = eqn.invars[0].aval
        axes = sorted(eqn.params["axes"], reverse=True)
        out = eqn.outvars[0].aval
        if len(axes) == x.ndim:
            return cast(out.dtype, f"{fn}({a[0]})")
        if not partial:
            raise Unsupported(eqn.primitive.name)
        expr = a[0]
        for d in axes:
            expr = f"{fn}({expr}, axis={d})"
        return f"{expr}.astype({dtype_ctor(out.dtype)})"

    return rule


def _dot_general(a, eqn):
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    x, y = eqn.invars[0].aval, eqn.invars[1].aval
    out = eqn.outvars[0].aval
    if xb or yb or x.ndim == 0 or y.ndim == 0 or out.dtype.kind not in "fc":
        raise Unsupported("dot_general")
    if x.dtype != out.dtype or y.dtype != out.dtype:
        raise Unsupported("dot_general")
    xf = [d for d in range(x.ndim) if d not in xc]
    yf = [d for d in range(y.ndim) if d not in yc]
    k = int(np.prod([x.shape[d] for d in xc], dtype=np.int64))
    m = int(np.prod([x.shape[d] for d in xf], dtype=np.int64))
    n = int(np.prod([y.shape[d] for d in yf], dtype=np.int64))
    x2 = _contig(f"{a[0]}.transpose({tuple([*xf, *xc])})") + f".reshape(({m}, {k}))"
    y2 = _contig(f"{a[1]}.transpose({tuple([*yc, *yf])})") + f".reshape(({k}, {n}))"
    if out.ndim == 0:
        return f"np.dot({x2}, {y2})[0, 0]"
    return f"np.dot({x2}, {y2}).reshape({out.shape})"


def _iota(a, eqn):
    out = eqn.outvars[0].aval
    if out.ndim != 1:
        raise Unsupported("iota")
    return f"np.arange({out.shape[0]}).astype({dtype_ctor(out.dtype)})"


def _slice(a, eqn):
    p = eqn.params
    strides = p["strides"] or (1,) * len(p["start_indices"])
    parts = [f"{s}:{e}:{st}" for s, e, st in
             zip(p["start_indices"], p["limit_indices"], strides, strict=True)]
    return f"{a[0]}[{', '.join(parts)}].copy()"


def _concatenate(a, eqn):
    if any(x.aval.ndim == 0 for x in eqn.invars):
        raise Unsupported("concatenate")
    return f"np.concatenate(({''.join(x + ', ' for x in a)}), axis={eqn.params['dimension']})"


ARRAY_RULES: dict[str, Callable[[list[str], JaxprEqn], str]] = {
    "add": _infix("+", "|"), "add_any": _infix("+", "|"), "sub": _infix("-"),
    "mul": _infix("*", "&"), "div": _div, "pow": _np("np.power"), "rem": _np("np.fmod"),
    "max": _np("np.maximum", "fciu"), "min": _np("np.minimum", "fciu"),
    "atan2": _np("np.arctan2"), "and": _infix("&", "&"), "or": _infix("|", "|"),
    "xor": _infix("^", "^"),
    "eq": _infix("==", "=="), "ne": _infix("!=", "!="), "lt": _infix("<"), "le": _infix("<="),
    "gt": _infix(">"), "ge": _infix(">="),
    "neg": lambda a, e: f"(-{a[0]})", "abs": _np("np.abs", "fciu"),
    "sign": _np("np.sign", "fiu"), "floor": _np("np.floor"), "ceil": _np("np.ceil"),
    "is_finite": _np("np.isfinite"), "exp": _np("np.exp"), "exp2": _np("np.exp2"),
    "log": _np("np.log"), "log1p": _np("np.log1p"), "expm1": _np("np.expm1"),
    "tanh": _np("np.tanh"), "sin": _np("np.sin"), "cos": _np("np.cos"), "tan": _np("np.tan"),
    "asin": _np("np.arcsin"), "acos": _np("np.arccos"), "atan": _np("np.arctan"),
    "sinh": _np("np.sinh"), "cosh": _np("np.cosh"), "asinh": _np("np.arcsinh"),
    "acosh": _np("np.arccosh"), "atanh": _np("np.arctanh"), "sqrt": _np("np.sqrt"),
    "cbrt": _np("np.cbrt"),
    "rsqrt": lambda a, e: f"({_c(e, 1)} / np.sqrt({a[0]}))",
    "logistic": lambda a, e: f"({_c(e, 1)} / ({_c(e, 1)} + np.exp(-{a[0]})))",
    "square": lambda a, e: f"({a[0]} * {a[0]})",
    "integer_pow": _integer_pow, "not": _not, "select_n": _select_n,
    "clamp": lambda a, e: f"np.minimum(np.maximum({a[1]}, {a[0]}), {a[2]})",
    "convert_element_type": _convert, "stop_gradient": lambda a, e: a[0],
    "broadcast_in_dim": _broadcast, "reshape": _reshape, "squeeze": _reshape,
    "expand_dims": _reshape, "transpose": _transpose,
    "reduce_sum": _reduce("np.sum", True), "reduce_max": _reduce("np.max", False),
    "reduce_min": _reduce("np.min", False), "reduce_and": _reduce("np.all", False),
    "reduce_or": _reduce("np.any", False), "reduce_prod": _reduce("np.prod", False),
    "dot_general": _dot_general, "iota": _iota, "slice": _slice,
    "concatenate": _concatenate,
}
_COMPARE = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "is_finite"})


def covered_primitives() -> list[str]:
    """The primitives a control-flow body may hold and still compile to one @njit function."""
    return sorted({*ARRAY_RULES, *SCALAR_RULES, *CONTROL_FLOW})


# ----------------------------------------------------------------------------- the renderer


class _Fn:
    """Naming state while one control-flow equation is rendered into one function."""

    def __init__(self) -> None:
        self.count = 0
        self.views: set[str] = set()
        self.parallel = False
        self.pp = core.PrintNames()

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count - 1}"

    def read(self, env: dict, x) -> str:
        if isinstance(x, Literal):
            return render_scalar(x.val, x.aval.dtype)
        return env[x]

    def owned(self, name: str, aval: core.ShapedArray) -> str:
        """`name`, copied if it may alias an argument (so loop-carried types unify)."""
        return f"{name}.copy()" if name in self.views and aval.ndim else name

    def jaxpr(self, closed: ClosedJaxpr | Jaxpr, args: list[str], lines: list[str],
              pad: str) -> list[str]:
        """Renders a (closed) jaxpr applied to `args`; returns the names of its outputs."""
        jaxpr, consts = (closed.jaxpr, closed.consts) if isinstance(closed, ClosedJaxpr) \
            else (closed, [])
        env: dict[Var, str] = {}
        for v, c in zip(jaxpr.constvars, consts, strict=True):
            if np.shape(c) != ():
                raise Unsupported("array constant")
            env[v] = render_scalar(core.to_numpy(c), v.aval.dtype)
        for v, a in zip(jaxpr.invars, args, strict=True):
            env[v] = a
        for eqn in jaxpr.eqns:
            self.eqn(eqn, env, lines, pad)
        return [self.read(env, x) for x in jaxpr.outvars]

    def eqn(self, eqn: JaxprEqn, env: dict, lines: list[str], pad: str) -> None:
        name = eqn.primitive.name
        ins = [self.read(env, x) for x in eqn.invars]
        if name in CONTROL_FLOW:
            outs = getattr(self, f"_{name}")(eqn, ins, lines, pad)
            for v, o in zip(eqn.outvars, outs, strict=True):
                env[v] = o
            return
        out = eqn.outvars[0]
        scalar = out.aval.ndim == 0 and all(x.aval.ndim == 0 for x in eqn.invars)
        if scalar and name in SCALAR_RULES and codegen_cpu.scalar_supported(eqn):
            expr = SCALAR_RULES[name](ins, eqn)
            if name not in _COMPARE and not (
                    out.aval.dtype == np.float64
                    and all(x.aval.dtype == np.float64 for x in eqn.invars)):
                expr = cast(out.aval.dtype, expr)
        elif name in ARRAY_RULES and len(eqn.outvars) == 1:
            expr = ARRAY_RULES[name](ins, eqn)
        else:
            raise Unsupported(name)
        t = self.fresh()
        env[out] = t
        if expr in self.views:
            self.views.add(t)  # an identity (stop_gradient, one-case select) of a view
        lines.append(f"{pad}{t} = {expr}  # {core.pp_eqn(eqn, self.pp, 0)}")

    def _assign(self, names: list[str], values: list[str], avals, lines, pad) -> None:
        if names:
            vals = [self.owned(v, a) for v, a in zip(values, avals, strict=True)]
            lines.append(f"{pad}{', '.join(names)}, = {', '.join(vals)},")

    def _cond(self, eqn: JaxprEqn, ins: list[str], lines: list[str], pad: str) -> list[str]:
        branches = eqn.params["branches"]
        outs = [self.fresh() for _ in eqn.outvars]
        avals = [v.aval for v in eqn.outvars]
        for k, branch in enumerate(branches):
            if k == len(branches) - 1:
                head = "else:" if k else "if True:"
            else:
                head = f"{'if' if k == 0 else 'elif'} {ins[0]} <= {k}:"
            lines.append(pad + head)
            res = self.jaxpr(branch, ins[1:], lines, pad + "    ")
            self._assign(outs, res, avals, lines, pad + "    ")
            if not outs:
                lines.append(pad + "    pass")
        return outs

    def _while(self, eqn: JaxprEqn, ins: list[str], lines: list[str], pad: str) -> list[str]:
        p = eqn.params
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        carry = [self.fresh() for _ in init]
        avals = [v.aval for v in eqn.outvars]
        self._assign(carry, init, avals, lines, pad)
        pred = self.fresh()
        (res,) = self.jaxpr(p["cond_jaxpr"], [*cconsts, *carry], lines, pad)
        lines.append(f"{pad}{pred} = {res}")
        lines.append(f"{pad}while {pred}:")
        inner = pad + "    "
        new = self.jaxpr(p["body_jaxpr"], [*bconsts, *carry], lines, inner)
        self._assign(carry, new, avals, lines, inner)
        (res,) = self.jaxpr(p["cond_jaxpr"], [*cconsts, *carry], lines, inner)
        lines.append(f"{inner}{pred} = {res}")
        return carry

    def _scan(self, eqn: JaxprEqn, ins: list[str], lines: list[str], pad: str) -> list[str]:
        p = eqn.params
        nconsts, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
        consts, init, xs = ins[:nconsts], ins[nconsts:nconsts + ncarry], ins[nconsts + ncarry:]
        carry_avals = [v.aval for v in eqn.outvars[:ncarry]]
        carry = [self.fresh() for _ in init]
        self._assign(carry, init, carry_avals, lines, pad)
        ys = [self.fresh() for _ in eqn.outvars[ncarry:]]
        for y, v in zip(ys, eqn.outvars[ncarry:], strict=True):
            lines.append(f"{pad}{y} = np.empty({v.aval.shape}, {dtype_ctor(v.aval.dtype)})")
        i = self.fresh()
        if ncarry == 0 and self._pays_parallel(p["jaxpr"], length):
            self.parallel = True
            loop = f"prange({length})"
        elif p["reverse"]:
            loop = f"range({length - 1}, -1, -1)"
        else:
            loop = f"range({length})"
        lines.append(f"{pad}for {i} in {loop}:")
        inner = pad + "    "
        x_names = []
        for x in xs:
            t = self.fresh()
            lines.append(f"{inner}{t} = {x}[{i}]")
            self.views.add(t)
            x_names.append(t)
        outs = self.jaxpr(p["jaxpr"], [*consts, *carry, *x_names], lines, inner)
        for y, o in zip(ys, outs[ncarry:], strict=True):
            lines.append(f"{inner}{y}[{i}] = {o}")
        self._assign(carry, outs[:ncarry], carry_avals, lines, inner)
        return [*carry, *ys]

    def _pays_parallel(self, closed: ClosedJaxpr, length: int) -> bool:
        return length > 1 and length * _work(closed.jaxpr) >= codegen_cpu.PRANGE_MIN


def _work(jaxpr: Jaxpr) -> int:
    """A rough element count of one run of `jaxpr` (while loops count _WHILE_TRIPS runs)."""
    total = 0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "while":
            total += _WHILE_TRIPS * (_work(eqn.params["body_jaxpr"].jaxpr)
                                     + _work(eqn.params["cond_jaxpr"].jaxpr))
        elif name == "scan":
            total += eqn.params["length"] * _work(eqn.params["jaxpr"].jaxpr)
        elif name == "cond":
            total += max(_work(b.jaxpr) for b in eqn.params["branches"])
        else:
            total += sum(max(v.aval.size, 1) for v in eqn.outvars)
    return total


def render(eqn: JaxprEqn) -> str:
    """The source of a module whose `kernel` runs `eqn` (raises Unsupported if it cannot)."""
    fn = _Fn()
    lines: list[str] = []
    args = []
    for k, x in enumerate(eqn.invars):
        if isinstance(x, Literal):
            args.append(render_scalar(x.val, x.aval.dtype))
            continue
        args.append(f"a{k}")
        if x.aval.ndim == 0:
            lines.append(f"    s{k} = a{k}[()]")
            args[-1] = f"s{k}"
        else:
            fn.views.add(f"a{k}")
    sub = Jaxpr([], [], [eqn], eqn.outvars)
    header = codegen_cpu._header(sub, False, fn.pp)
    outs = getattr(fn, f"_{eqn.primitive.name}")(eqn, args, lines, "    ")
    rets = [fn.owned(o, v.aval) for o, v in zip(outs, eqn.outvars, strict=True)]
    params = ", ".join(f"a{k}" for k, x in enumerate(eqn.invars) if not isinstance(x, Literal))
    deco = f'@njit(parallel={fn.parallel}, error_model="numpy", cache=CACHE, fastmath=False)'
    header = header.replace("parallel=False", f"parallel={fn.parallel}", 1)
    body = "\n".join(lines)
    return (f"{header}\n\n\n{deco}\ndef kernel({params}):\n{body}\n"
            f"    return ({''.join(r + ', ' for r in rets)})\n")


# ----------------------------------------------------------------------------- fallback


Compile = Callable[[ClosedJaxpr], Callable[..., Any]]


def python_lowering(eqn: JaxprEqn, compile_closed: Compile) -> Callable[..., list]:
    """A driver-level function for `eqn`: a Python loop calling its compiled sub-jaxprs."""
    p = eqn.params
    name = eqn.primitive.name
    if name == "cond":
        fns = [compile_closed(b) for b in p["branches"]]

        def run_cond(index, *ops):
            return fns[min(max(int(index), 0), len(fns) - 1)](*ops)

        return run_cond
    if name == "while":
        cond_fn, body_fn = compile_closed(p["cond_jaxpr"]), compile_closed(p["body_jaxpr"])
        nc, nb = p["cond_nconsts"], p["body_nconsts"]

        def run_while(*args):
            cc, bc, carry = args[:nc], args[nc:nc + nb], list(args[nc + nb:])
            while bool(cond_fn(*cc, *carry)[0]):
                carry = list(body_fn(*bc, *carry))
            return carry

        return run_while
    return _scan_fallback(eqn, compile_closed(p["jaxpr"]))


def _scan_fallback(eqn: JaxprEqn, body: Callable) -> Callable[..., list]:
    p = eqn.params
    nconsts, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
    y_avals = [v.aval for v in eqn.outvars[ncarry:]]

    def run_scan(*args):
        consts, carry = args[:nconsts], list(args[nconsts:nconsts + ncarry])
        xs = args[nconsts + ncarry:]
        ys = [np.empty(a.shape, a.dtype) for a in y_avals]
        steps = range(length - 1, -1, -1) if p["reverse"] else range(length)
        for i in steps:
            outs = body(*consts, *carry, *[np.asarray(x[i], order="C") for x in xs])
            carry = list(outs[:ncarry])
            for y, o in zip(ys, outs[ncarry:], strict=True):
                y[i] = o
        return [*carry, *ys]

    return run_scan


# ----------------------------------------------------------------------------- the driver


def driver_lines(node: NopythonCall, j: int, names: dict, pp: core.PrintNames):
    """(imports, lines) calling `node` from the driver; 0-d results become 0-d arrays."""
    eqn = node.eqn
    imports = []
    if node.module is not None:
        call = f"k{j}_nopy"
        imports.append(f"from {node.module} import kernel as {call}")
        args = [names[x] for x in eqn.invars if isinstance(x, Var)]
    else:
        call = node.fallback_name
        args = [names[x] if isinstance(x, Var) else
                f"np.asarray({render_scalar(x.val, x.aval.dtype)})" for x in eqn.invars]
    outs = [names[v] for v in eqn.outvars]
    comment = core.pp_eqn(eqn, pp, 0).replace("\n", "\n    # ")
    lines = [f"    # {comment}"]
    if outs:
        lines.append(f"    {', '.join(outs)}, = {call}({', '.join(args)})")
    for v in eqn.outvars:
        if v.aval.ndim == 0:
            lines.append(f"    {names[v]} = np.asarray({names[v]}, {dtype_ctor(v.aval.dtype)})")
    return imports, lines
