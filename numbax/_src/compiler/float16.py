"""float16 on the CPU: Numba's CPU target has no float16 (not even as an array element), so a
program's float16 values are carried as float32 and each float16 result is rounded to float16's
values (`round_to_float16`, lax/convert.py) right where numpy would round it.

Computing one +, -, *, /, sqrt of float16 operands in float32 and rounding once gives numpy's
float16 result bit for bit (numpy computes them in float32 too, and float32 holds more than
twice float16's precision, so rounding twice never differs); the other rewritten primitives are
exact (selection, comparison, max/min, rounding to integers, moves of data). Every other
equation keeps its float16 operands and runs its eager implementation (the CPU backend refuses
to compile float16), with exact conversions around it. Program inputs and outputs stay
float16; the conversions at the boundary are exact."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, typecheck
from numbax._src.compiler.cpu.control_flow import touches_float16
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from numbax._src.interpreters.ad import add_any_p
from numbax._src.lax import convert as lconv
from numbax._src.lax import elementwise as lx
from numbax._src.lax import indexing as ix
from numbax._src.lax import reductions as lr
from numbax._src.lax import shape_ops as ls
from numbax._src.lax.control_flow.conditionals import cond_p
from numbax._src.lax.control_flow.loops import scan_p, while_p

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)

# float16 results computed in float32 and rounded once: numpy's bits
_ROUNDED = frozenset({lx.add_p, add_any_p, lx.sub_p, lx.mul_p, lx.div_p, lx.sqrt_p, lx.square_p})
# exact in float32: selections, comparisons, integer rounding, data movement
_EXACT = frozenset({
    lx.neg_p, lx.abs_p, lx.max_p, lx.min_p, lx.sign_p, lx.floor_p, lx.ceil_p, lx.round_p,
    lx.select_n_p, lx.clamp_p, lx.eq_p, lx.ne_p, lx.lt_p, lx.le_p, lx.gt_p, lx.ge_p,
    lx.is_finite_p, lx.rem_p, ls.broadcast_in_dim_p, ls.reshape_p, ls.transpose_p,
    ls.squeeze_p, ls.rev_p, ls.slice_p, ls.concatenate_p, ls.pad_p, ls.copy_p,
    ix.dynamic_slice_p, ix.dynamic_update_slice_p, ix.gather_p, lr.reduce_max_p,
    lr.reduce_min_p, lr.argmax_p, lr.argmin_p, lr.cummax_p, lr.cummin_p})
_CONTROL = {cond_p: ("branches",), while_p: ("cond_jaxpr", "body_jaxpr"), scan_p: ("jaxpr",)}


def widen(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` computing its float16 values in float32 (inputs and outputs stay float16)."""
    if not _has_float16(jaxpr):
        return jaxpr
    w = _Widener()
    for eqn in jaxpr.eqns:
        w.eqn(eqn)
    outvars = [w.read_narrow(x) if x.aval.dtype == F16 else w.read(x) for x in jaxpr.outvars]
    return typecheck.check_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, w.eqns, outvars))


def _has_float16(jaxpr: Jaxpr) -> bool:
    return any(v.aval.dtype == F16 for v in [*jaxpr.constvars, *jaxpr.invars]) or any(
        touches_float16(e) for e in jaxpr.eqns)


def _wide_aval(aval: core.ShapedArray) -> core.ShapedArray:
    return aval.update(dtype=F32) if aval.dtype == F16 else aval


class _Widener:
    """The rewritten equations, and where each original variable's value now lives: a float16
    variable may have a float32 form (`wide`), a float16 form (`narrow`, itself for the
    program's inputs) or both; each conversion is made once, when first needed."""

    def __init__(self) -> None:
        self.eqns: list[JaxprEqn] = []
        self.env: dict[Var, Any] = {}  # variables of other dtypes: their new variables
        self.wide: dict[Var, Any] = {}
        self.narrow: dict[Var, Any] = {}

    def read(self, x: Any) -> Any:
        """`x` as the rewritten program computes it (float16 values in float32)."""
        if isinstance(x, Literal):
            return Literal(np.float32(x.val), _wide_aval(x.aval)) if x.aval.dtype == F16 else x
        if x.aval.dtype != F16:
            return self.env.get(x, x)
        if x not in self.wide:
            self.wide[x] = self.convert(self.narrow.get(x, x), F32)
        return self.wide[x]

    def read_narrow(self, x: Any) -> Any:
        """A float16 `x` as float16 (exact conversions of float32 forms)."""
        if isinstance(x, Literal):
            return x
        if x not in self.narrow and x in self.wide:
            self.narrow[x] = self.convert(self.wide[x], F16)
        return self.narrow.get(x, x)

    def emit(self, prim: core.Primitive, ins: list, params: dict) -> list[Var]:
        avals = core.abstract_eval(prim, [x.aval for x in ins], params)
        outs = [Var(a) for a in avals]
        self.eqns.append(JaxprEqn(prim, ins, outs, params))
        return outs

    def convert(self, x: Any, dtype: np.dtype) -> Var:
        return self.emit(lconv.convert_element_type_p, [x],
                         {"new_dtype": dtype, "weak_type": x.aval.weak_type})[0]

    def round(self, x: Var) -> Var:
        return self.emit(lconv.round_to_float16_p, [x], {})[0]

    def eqn(self, eqn: JaxprEqn) -> None:
        prim, params = eqn.primitive, dict(eqn.params)
        touches = any(v.aval.dtype == F16 for v in [*eqn.invars, *eqn.outvars])
        if prim in _CONTROL and touches_float16(eqn):
            for name in _CONTROL[prim]:
                p = params[name]
                params[name] = tuple(map(_widen_closed, p)) if isinstance(p, tuple) else \
                    _widen_closed(p)
            outs = self.emit(prim, [self.read(x) for x in eqn.invars], params)
        elif not touches:
            outs = self.emit(prim, [self.read(x) for x in eqn.invars], params)
        elif prim is lconv.convert_element_type_p:
            outs = [self._convert(eqn)]
        elif prim in _ROUNDED or prim in _EXACT:
            outs = self.emit(prim, [self.read(x) for x in eqn.invars], params)
            if prim in _ROUNDED:
                outs = [self.round(o) if o.aval.dtype == F32 else o for o in outs]
        else:  # float16 through the eager impl
            ins = [self.read_narrow(x) if x.aval.dtype == F16 else self.read(x)
                   for x in eqn.invars]
            outs = self.emit(prim, ins, params)
            for v, o in zip(eqn.outvars, outs, strict=True):
                (self.narrow if v.aval.dtype == F16 else self.env)[v] = o
            return
        for v, o in zip(eqn.outvars, outs, strict=True):
            (self.wide if v.aval.dtype == F16 else self.env)[v] = o

    def _convert(self, eqn: JaxprEqn) -> Var:
        """convert_element_type to or from float16: from float16 the float32 value converts
        exactly; to float16 the value is rounded once from its own precision."""
        (x,) = eqn.invars
        src, dst = x.aval.dtype, np.dtype(eqn.params["new_dtype"])
        value = self.read(x)
        if src == F16:
            return value if dst == F16 else self.convert(value, dst)
        if src.kind == "c":  # complex to float16: numpy's own cast
            return self.convert(self.convert(value, F16), F32)
        wide = value if src == F32 else self.convert(value, F64)
        rounded = self.round(wide)
        return rounded if src == F32 else self.convert(rounded, F32)


def _widen_closed(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A control-flow body computing in float32 throughout: float16 inputs, consts and outputs
    become float32 (the enclosing equation's operands are widened the same way)."""
    jaxpr = closed.jaxpr
    if not _has_float16(jaxpr):
        return closed
    w = _Widener()
    invars = [Var(_wide_aval(v.aval)) if v.aval.dtype == F16 else v for v in jaxpr.invars]
    constvars = [Var(_wide_aval(v.aval)) if v.aval.dtype == F16 else v
                 for v in jaxpr.constvars]
    for old, new in zip([*jaxpr.invars, *jaxpr.constvars], [*invars, *constvars], strict=True):
        if old is not new:
            w.wide[old] = new
    consts = [np.asarray(c, F32) if np.asarray(c).dtype == F16 else c for c in closed.consts]
    for eqn in jaxpr.eqns:
        w.eqn(eqn)
    outvars = [w.read(x) for x in jaxpr.outvars]
    return ClosedJaxpr(typecheck.check_jaxpr(Jaxpr(constvars, invars, w.eqns, outvars)), consts)
