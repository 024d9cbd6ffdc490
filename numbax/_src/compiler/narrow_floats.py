"""float16 and bfloat16 computed in float32: Numba's CPU target has neither (not even as an
array element), so a program's float16 and bfloat16 values are carried as float32 and each
result is rounded to its dtype's values (`round_to_float16`, `round_to_bfloat16`,
lax/convert.py) right where eager execution rounds it. The CUDA backend, whose kernels compute
float16, does the same for bfloat16 (`Mode`).

float16: computing one +, -, *, /, sqrt of float16 operands in float32 and rounding once gives
numpy's float16 result bit for bit (numpy computes them in float32 too, and float32 holds more
than twice float16's precision, so rounding twice never differs); the other rewritten
primitives are exact (selection, comparison, max/min, rounding to integers, moves of data).
Every other equation keeps its float16 operands and runs its eager implementation (the CPU
backend refuses to compile float16), with exact conversions around it.

bfloat16: eager execution computes every primitive on bfloat16 operands in float32 and rounds
its bfloat16 results (dispatch.py: numpy and scipy know no bfloat16), so here every equation is
rewritten the same way: float32 operands, dtype parameters of bfloat16 read as float32, one
rounding per bfloat16 result (none after the exact primitives); bit casts become shifts of
the float32's bits. Only nextafter (whose step is bfloat16's) and equations holding
sub-programs other than cond/while/scan run eagerly on bfloat16 operands.

Program inputs and outputs keep their dtypes; the conversions at the boundary are exact."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from numbax._src import core, dtypes, typecheck
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from numbax._src.interpreters.ad import add_any_p
from numbax._src.lax import convert as lconv
from numbax._src.lax import dot as ld
from numbax._src.lax import elementwise as lx
from numbax._src.lax import indexing as ix
from numbax._src.lax import reductions as lr
from numbax._src.lax import shape_ops as ls
from numbax._src.lax.control_flow.conditionals import cond_p
from numbax._src.lax.control_flow.loops import scan_p, while_p

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = dtypes.bfloat16
NARROW = (F16, BF16)
U16, U32 = np.dtype(np.uint16), np.dtype(np.uint32)
_SIXTEEN = Literal(np.uint32(16), core.ShapedArray((), U32))

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
# moves of data: on bfloat16 values they move the bits
_MOVES = frozenset({ls.broadcast_in_dim_p, ls.reshape_p, ls.transpose_p, ls.squeeze_p,
                    ls.rev_p, ls.slice_p})
_CONTROL = {cond_p: ("branches",), while_p: ("cond_jaxpr", "body_jaxpr"), scan_p: ("jaxpr",)}


class Mode(NamedTuple):
    """What a backend widens: `dtypes` (the CPU: float16 and bfloat16; CUDA, whose kernels
    compute float16: bfloat16), whether bfloat16 products keep bfloat16 operands (CUDA with
    cuBLAS: tensor cores read them; the CPU with AMX tiles, cpu/runtime/gemm_amx.py; both
    accumulate in float32), which of them (`takes`; None: all), and whether control-flow
    bodies' products do too (`in_bodies`: the CPU compiles bodies into Numba, which has no
    bfloat16)."""
    dtypes: tuple = NARROW
    narrow_products: bool = False
    takes: Callable[[JaxprEqn], bool] | None = None
    in_bodies: bool = True


CPU = Mode()


def widen(jaxpr: Jaxpr, mode: Mode = CPU) -> Jaxpr:
    """`jaxpr` computing its `mode.dtypes` values in float32 (inputs and outputs keep their
    dtypes)."""
    if not _has_narrow(jaxpr, mode.dtypes):
        return jaxpr
    w = _Widener(mode)
    # bfloat16 inputs' bits viewed up front: a view (a driver step) made at a first use
    # between two kernels would keep them from fusing
    for v in [*jaxpr.constvars, *jaxpr.invars]:
        if v.aval.dtype == BF16 and BF16 in mode.dtypes:
            w.narrow[v] = v
            w.bits(v)
    for eqn in jaxpr.eqns:
        w.eqn(eqn)
    outvars = [w.read_narrow(x) if x.aval.dtype in mode.dtypes else w.read(x)
               for x in jaxpr.outvars]
    return typecheck.check_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, w.eqns, outvars))


def touches(eqn: JaxprEqn, narrow: tuple = NARROW) -> bool:
    """Whether `eqn` (or a sub-jaxpr in its params) has an operand or result of a `narrow`
    dtype."""
    return any(v.aval.dtype in narrow for v in (*eqn.invars, *eqn.outvars)) or any(
        touches(e, narrow) for sub in core.jaxprs_in_params(eqn.params) for e in sub.eqns)


def _has_narrow(jaxpr: Jaxpr, narrow: tuple) -> bool:
    return any(v.aval.dtype in narrow for v in [*jaxpr.constvars, *jaxpr.invars]) or any(
        touches(e, narrow) for e in jaxpr.eqns)


def _wide_aval(aval: core.ShapedArray) -> core.ShapedArray:
    return aval.update(dtype=F32) if aval.dtype in NARROW else aval


def _wide_params(params: dict) -> dict:
    """bfloat16 dtype parameters (dot_general's preferred_element_type, iota's dtype) read as
    float32: the equation computes in float32 and its result is rounded after."""
    return {k: F32 if isinstance(v, np.dtype) and v == BF16 else v for k, v in params.items()}


def _is_bfloat16_bitcast(eqn: JaxprEqn) -> bool:
    src, dst = eqn.invars[0].aval.dtype, np.dtype(eqn.params["new_dtype"])
    return BF16 in (src, dst) and {src, dst} <= {BF16, U16, np.dtype(np.int16)}


def _holds_program(eqn: JaxprEqn) -> bool:
    return next(core.jaxprs_in_params(eqn.params), None) is not None


class _Widener:
    """The rewritten equations, and where each original variable's value now lives: a float16
    (bfloat16) variable may have a float32 form (`wide`), a float16 (bfloat16) form (`narrow`,
    itself for the program's inputs) or both; each conversion is made once, when first
    needed."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.eqns: list[JaxprEqn] = []
        self.env: dict[Var, Any] = {}  # variables of other dtypes: their new variables
        self.wide: dict[Var, Any] = {}
        self.narrow: dict[Var, Any] = {}
        # bfloat16 variables' bits as uint16 (inputs, products, moves of those, bit casts):
        # their float32 form is made from these, and a bit cast's output keeps them
        self.bits_of: dict[Var, Any] = {}

    def read(self, x: Any) -> Any:
        """`x` as the rewritten program computes it (narrow values in float32)."""
        if isinstance(x, Literal):
            narrow = x.aval.dtype in self.mode.dtypes
            return Literal(np.float32(x.val), _wide_aval(x.aval)) if narrow else x
        if x.aval.dtype not in self.mode.dtypes:
            return self.env.get(x, x)
        if x not in self.wide:
            if x.aval.dtype == BF16:
                self.wide[x] = self._from_bits(self.bits(x))
            else:
                self.wide[x] = self.convert(self.narrow.get(x, x), F32)
        return self.wide[x]

    def bits(self, x: Var) -> Var:
        """The uint16 bits of the bfloat16 variable `x` (a view of its narrow form, made
        once)."""
        if x not in self.bits_of:
            self.bits_of[x] = self._view(self.narrow.get(x, x), U16)
        return self.bits_of[x]

    def read_narrow(self, x: Any) -> Any:
        """A narrow `x` in its own dtype (exact conversions of float32 forms)."""
        if isinstance(x, Literal):  # numpy has no bfloat16 scalar to write into source
            return self._view(self._upper_half(self.read(x)), BF16) if x.aval.dtype == BF16 else x
        if x not in self.narrow and x in self.bits_of:  # the bits as they are: NaN payloads
            self.narrow[x] = self._view(self.bits_of[x], BF16)
        if x not in self.narrow and x in self.wide:
            wide = self.wide[x]
            self.narrow[x] = self._view(self._upper_half(wide), BF16) if x.aval.dtype == BF16 \
                else self.convert(wide, x.aval.dtype)
        return self.narrow.get(x, x)

    def emit(self, prim: core.Primitive, ins: list, params: dict) -> list[Var]:
        avals = core.abstract_eval(prim, [x.aval for x in ins], params)
        outs = [Var(a) for a in avals]
        self.eqns.append(JaxprEqn(prim, ins, outs, params))
        return outs

    def convert(self, x: Any, dtype: np.dtype) -> Var:
        return self.emit(lconv.convert_element_type_p, [x],
                         {"new_dtype": dtype, "weak_type": x.aval.weak_type})[0]

    def round(self, x: Var, dtype: np.dtype) -> Var:
        """float32 (float64, for float16) `x` rounded to `dtype`'s values."""
        if dtype == BF16:
            if x.aval.dtype != F32:  # as ml_dtypes casts float64: through float32
                x = self.convert(x, F32)
            return self.emit(lconv.round_to_bfloat16_p, [x], {})[0]
        return self.emit(lconv.round_to_float16_p, [x], {})[0]

    def eqn(self, eqn: JaxprEqn) -> None:
        prim, params = eqn.primitive, dict(eqn.params)
        narrow_operands = any(v.aval.dtype in self.mode.dtypes
                              for v in [*eqn.invars, *eqn.outvars])
        bfloat16 = any(v.aval.dtype == BF16 for v in [*eqn.invars, *eqn.outvars]) or \
            any(isinstance(v, np.dtype) and v == BF16 for v in params.values())
        if prim in _CONTROL and touches(eqn, self.mode.dtypes):
            for name in _CONTROL[prim]:
                p = params[name]
                inner = self.mode if self.mode.in_bodies else \
                    self.mode._replace(narrow_products=False)
                params[name] = tuple(_widen_closed(b, inner) for b in p) if isinstance(
                    p, tuple) else _widen_closed(p, inner)
            outs = self.emit(prim, [self.read(x) for x in eqn.invars], params)
        elif not narrow_operands and not bfloat16:
            outs = self.emit(prim, [self.read(x) for x in eqn.invars], params)
        elif prim is lconv.convert_element_type_p:
            outs = [self._convert(eqn)]
        elif prim is lconv.bitcast_convert_type_p and _is_bfloat16_bitcast(eqn):
            outs = [self._bitcast_bfloat16(eqn)]
            if eqn.outvars[0].aval.dtype == BF16:  # rounding float32 back would quiet NaNs
                bits = self.read(eqn.invars[0])
                self.bits_of[eqn.outvars[0]] = bits if bits.aval.dtype == U16 else \
                    self._view(bits, U16)
        elif prim in _MOVES and bfloat16 and len(eqn.invars) == 1 and \
                not isinstance(eqn.invars[0], Literal) and (
                    eqn.invars[0] in self.bits_of or eqn.invars[0] not in self.wide):
            # a move of bfloat16 values moves their bits: the float32 form is made after it,
            # in the kernel that reads it (a broadcast bias is not written out in float32)
            (v,) = eqn.outvars
            self.bits_of[v] = self.emit(prim, [self.bits(eqn.invars[0])], params)[0]
            return
        elif self.mode.narrow_products and prim is ld.dot_general_p and all(
                x.aval.dtype == BF16 and x.aval.size for x in eqn.invars) and (
                    self.mode.takes is None or self.mode.takes(eqn)):
            # float32 sums, which the library rounds into a bfloat16 result itself
            (v,) = eqn.outvars
            out = self.emit(prim, [self.read_narrow(x) for x in eqn.invars],
                            {**params, "preferred_element_type": v.aval.dtype})[0]
            if v.aval.dtype == BF16:  # its bits viewed here, beside the product
                self.narrow[v] = out
                self.bits(v)
            else:
                self.env[v] = out
            return
        elif prim in _ROUNDED or prim in _EXACT or bfloat16 and not (
                _holds_program(eqn) or prim is lx.nextafter_p):  # its step is bfloat16's
            outs = self.emit(prim, [self.read(x) for x in eqn.invars], _wide_params(params))
            if prim not in _EXACT:
                outs = [self.round(o, v.aval.dtype) if v.aval.dtype in self.mode.dtypes else o
                        for v, o in zip(eqn.outvars, outs, strict=True)]
            for v, o in zip(eqn.outvars, outs, strict=True):
                if v.aval.dtype == BF16 and BF16 in self.mode.dtypes:
                    # read through its bits: a later kernel reading it gets the 16 bits and
                    # recomputes the float32 (remat.rematerialize), half the bytes
                    self.bits_of[v] = self._upper_half(o)
                    self.wide[v] = self._from_bits(self.bits_of[v])
            outs = [self.wide.get(v, o) for v, o in zip(eqn.outvars, outs, strict=True)]
        else:  # through the eager impl, on narrow operands
            ins = [self.read_narrow(x) if x.aval.dtype in self.mode.dtypes else self.read(x)
                   for x in eqn.invars]
            outs = self.emit(prim, ins, params)
            for v, o in zip(eqn.outvars, outs, strict=True):
                (self.narrow if v.aval.dtype in self.mode.dtypes else self.env)[v] = o
            return
        for v, o in zip(eqn.outvars, outs, strict=True):
            (self.wide if v.aval.dtype in self.mode.dtypes else self.env)[v] = o

    def _bitcast_bfloat16(self, eqn: JaxprEqn) -> Var:
        """bitcast_convert_type between bfloat16 and a 16-bit integer, on the float32 form."""
        (x,) = eqn.invars
        dst = np.dtype(eqn.params["new_dtype"])
        if dst != BF16:  # bfloat16 -> 16-bit integer
            bits = self._upper_half(self.read(x))
            return bits if dst == U16 else self._view(bits, dst)
        bits = self.read(x)
        return self._from_bits(bits if bits.aval.dtype == U16 else self._view(bits, U16))

    # bfloat16's bits are the upper half of its float32's. These conversions are integer work
    # fused into the kernels around them; only the views between bfloat16 and uint16 (no
    # data moved) run in the driver.
    def _from_bits(self, bits: Any) -> Var:
        """The float32 whose upper half is the uint16 `bits`: that bfloat16's value."""
        upper = self.emit(lx.shift_left_p, [self.convert(bits, U32), _SIXTEEN], {})[0]
        return self.emit(lconv.bitcast_convert_type_p, [upper], {"new_dtype": F32})[0]

    def _upper_half(self, wide: Any) -> Var:
        """The uint16 upper half of the float32 `wide`, a bfloat16 value (rounded, or exact):
        its bfloat16 bits."""
        bits = self.emit(lconv.bitcast_convert_type_p, [wide], {"new_dtype": U32})[0]
        return self.convert(self.emit(lx.shift_right_logical_p, [bits, _SIXTEEN], {})[0], U16)

    def _view(self, x: Any, dtype: np.dtype) -> Var:
        return self.emit(lconv.bitcast_convert_type_p, [x], {"new_dtype": dtype})[0]

    def _convert(self, eqn: JaxprEqn) -> Var:
        """convert_element_type to or from a narrow float: from it the float32 value converts
        exactly; to it the value is rounded once from its own precision (float16) or from
        float32 (bfloat16, as ml_dtypes casts)."""
        (x,) = eqn.invars
        src, dst = x.aval.dtype, np.dtype(eqn.params["new_dtype"])
        value = self.read(x)
        if src == dst:
            return value
        if dst not in self.mode.dtypes:
            return self.convert(value, dst)
        if dst == BF16:
            exact = src in self.mode.dtypes or src == F32
            return self.round(value if exact else self.convert(value, F32), BF16)
        if src.kind == "c":  # complex to float16: numpy's own cast
            return self.convert(self.convert(value, F16), F32)
        wide = value if src in self.mode.dtypes or src == F32 else self.convert(value, F64)
        rounded = self.round(wide, F16)
        return rounded if wide.aval.dtype == F32 else self.convert(rounded, F32)


def _widen_closed(closed: ClosedJaxpr, mode: Mode) -> ClosedJaxpr:
    """A control-flow body computing in float32 throughout: narrow inputs, consts and outputs
    become float32 (the enclosing equation's operands are widened the same way)."""
    jaxpr = closed.jaxpr
    if not _has_narrow(jaxpr, mode.dtypes):
        return closed
    w = _Widener(mode)
    invars = [Var(_wide_aval(v.aval)) if v.aval.dtype in mode.dtypes else v for v in jaxpr.invars]
    constvars = [Var(_wide_aval(v.aval)) if v.aval.dtype in mode.dtypes else v
                 for v in jaxpr.constvars]
    for old, new in zip([*jaxpr.invars, *jaxpr.constvars], [*invars, *constvars], strict=True):
        if old is not new:
            w.wide[old] = new
    consts = [np.asarray(c).astype(F32) if np.asarray(c).dtype in mode.dtypes else c
              for c in closed.consts]
    for eqn in jaxpr.eqns:
        w.eqn(eqn)
    outvars = [w.read(x) for x in jaxpr.outvars]
    return ClosedJaxpr(typecheck.check_jaxpr(Jaxpr(constvars, invars, w.eqns, outvars)), consts)
