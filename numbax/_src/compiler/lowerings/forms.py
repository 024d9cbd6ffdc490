"""Constructors of scalar and array rules, so most registrations are one line.

A scalar rule maps the operands' source names and the equation to one element's expression;
an array rule does the same for whole arrays inside compiled control flow. Helper functions of
the backend's scalar library appear as `sc.<name>` (cpu/runtime/scalars.py on the CPU,
cuda/runtime/device.py on CUDA)."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.registry import ScalarRule, Unsupported
from numbax._src.compiler.source import dtype_ctor, render_scalar
from numbax._src.core import JaxprEqn, Literal

FLOAT_KINDS = "fc"  # operand kinds numpy's float ufuncs take in compiled control flow


def operand_dtype(eqn: JaxprEqn, i: int = 0) -> np.dtype:
    return eqn.invars[i].aval.dtype


def involves_complex(eqn: JaxprEqn) -> bool:
    return any(v.aval.dtype.kind == "c" for v in [*eqn.invars, *eqn.outvars])


def no_complex(eqn: JaxprEqn) -> bool:
    return not involves_complex(eqn)


def const(eqn: JaxprEqn, value) -> str:
    """`value` as a constant of the equation's output dtype."""
    return render_scalar(value, eqn.outvars[0].aval.dtype)


def call(fn: str) -> ScalarRule:
    """`fn(a, b, ...)`."""
    return lambda args, eqn: f"{fn}({', '.join(args)})"


def infix(op: str) -> ScalarRule:
    return lambda args, eqn: f"({args[0]} {op} {args[1]})"


def prefix(op: str) -> ScalarRule:
    return lambda args, eqn: f"({op}{args[0]})"


def by_kind(float_rule: ScalarRule, int_rule: ScalarRule,
            bool_rule: ScalarRule | None = None) -> ScalarRule:
    """One rule per operand kind: bool (when given), integer/bool, float/complex."""
    def rule(args, eqn):
        kind = operand_dtype(eqn).kind
        if kind == "b" and bool_rule is not None:
            return bool_rule(args, eqn)
        return int_rule(args, eqn) if kind in "iub" else float_rule(args, eqn)

    return rule


def complex_or(rule: ScalarRule, complex_rule: ScalarRule) -> ScalarRule:
    """`complex_rule` for equations with a complex operand or result, else `rule`."""
    return lambda args, eqn: complex_rule(args, eqn) if involves_complex(eqn) else rule(args, eqn)


def template(form: str) -> ScalarRule:
    """A format string over the operands ({0}, {1}, ...)."""
    return lambda args, eqn: form.format(*args)


def by_float_width(f32: ScalarRule, f64: ScalarRule) -> ScalarRule:
    return lambda args, eqn: f32(args, eqn) if operand_dtype(eqn) == np.float32 else f64(args, eqn)


def integer_pow(ipow: str, div: str | None = None) -> ScalarRule:
    """x**y for the static integer y: products up to the cube, `ipow` by squaring beyond, and
    the reciprocal (through `div(1, .)` when given) for negative y."""
    def rule(args, eqn):
        x, y = args[0], eqn.params["y"]
        one = render_scalar(1, operand_dtype(eqn))
        if y == 0:
            return one
        power = "(" + " * ".join([x] * abs(y)) + ")" if abs(y) <= 3 else f"{ipow}({x}, {abs(y)})"
        if y > 0:
            return power
        # (x ** -1 divides by x itself: ipow's 1 * x would turn inf + 0j into inf + nanj)
        return f"{div}({one}, {power})" if div else f"({one} / {power})"

    return rule


def select_n(args: list[str], eqn: JaxprEqn) -> str:
    """The case picked by the (bool or int32) selector, as a chain of conditionals."""
    which, cases = args[0], args[1:]
    if len(cases) == 1:
        return cases[0]
    if operand_dtype(eqn).kind == "b":
        return f"({cases[1]} if {which} else {cases[0]})"
    expr = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        expr = f"({cases[k]} if {which} <= {k} else {expr})"
    return expr


def float_to_int_call(x: str, dst: np.dtype) -> str:
    """The scalar helper call converting float x to the integer dtype `dst` as JAX does
    (saturated, NaN to 0: scalar_helpers.float_to_int), as int64 (uint64: its bits)."""
    if dst == np.uint64:
        return f"sc.float_to_uint({x})"
    info = np.iinfo(dst)
    return f"sc.float_to_int({x}, {int(info.min)}, {int(info.max)})"


def convert(args: list[str], eqn: JaxprEqn) -> str:
    """convert_element_type before the caller's cast: bool is `!= 0`, complex to real drops
    the imaginary part (numpy's rule), float to integer through the helper that saturates as
    JAX does (LLVM's conversion is poison out of range)."""
    src, dst = operand_dtype(eqn), np.dtype(eqn.params["new_dtype"])
    if dst == np.bool_:
        return f"({args[0]} != 0)"
    x = f"{args[0]}.real" if src.kind == "c" and dst.kind != "c" else args[0]
    if src.kind in "fc" and dst.kind in "iu":
        return float_to_int_call(x, dst)
    return x


def shift(kind: str, literal_ok: bool = False) -> ScalarRule:
    """Shifts defined for every amount (numpy's and XLA's results, never LLVM poison) through
    the sc.* helpers; with `literal_ok`, a literal amount in range is the plain operator."""
    def rule(args, eqn):
        dtype = operand_dtype(eqn)
        bits = dtype.itemsize * 8
        x, y = args
        unsigned = f"np.uint{bits}"
        amount = eqn.invars[1]
        plain = literal_ok and isinstance(amount, Literal) and 0 <= int(amount.val) < bits
        if kind == "left":
            return f"({x} << {y})" if plain else f"sc.shift_left({x}, {y}, {bits})"
        if kind == "arithmetic":  # unsigned: the signed view's bits shifted, as in XLA
            if dtype.kind == "u":
                signed = f"np.int{bits}"
                x, y = f"{signed}({x})", f"{signed}({y})"
            shifted = f"({x} >> {y})" if plain else \
                f"sc.shift_right_arithmetic({x}, {y}, {bits})"
            return f"{unsigned}({shifted})" if dtype.kind == "u" else shifted
        if plain:
            return f"({unsigned}({x}) >> {unsigned}({y}))"
        return f"sc.shift_right_logical({unsigned}({x}), {unsigned}({y}), {bits})"

    return rule


def bitcast(args: list[str], eqn: JaxprEqn) -> str:
    """A same-width bitcast as a scalar view."""
    src = dtype_ctor(operand_dtype(eqn))
    return f"{src}({args[0]}).view({dtype_ctor(eqn.params['new_dtype'])})"


# ----------------------------------------------------------------------------- array rules


def array_infix(op: str, bool_op: str | None = None) -> ScalarRule:
    def rule(args, eqn):
        if operand_dtype(eqn) == np.bool_:
            if bool_op is None:
                raise Unsupported(eqn.primitive.name)
            return f"({args[0]} {bool_op} {args[1]})"
        return f"({args[0]} {op} {args[1]})"

    return rule


def array_call(fn: str, kinds: str = FLOAT_KINDS) -> ScalarRule:
    """`fn(...)` on arrays whose operand kind is in `kinds`."""
    def rule(args, eqn):
        if operand_dtype(eqn).kind not in kinds:
            raise Unsupported(eqn.primitive.name)
        return f"{fn}({', '.join(args)})"

    return rule


def float_max(a: str, b: str) -> str:
    """lax.max of floats: NaN wins, and +0.0 beats -0.0."""
    return f"({a} if ({a} > {b} or {a} != {a} or ({a} == {b} and math.copysign(1.0, {b}) < 0))" \
        f" else {b})"


def float_min(a: str, b: str) -> str:
    """lax.min of floats: NaN wins, and -0.0 beats +0.0."""
    return f"({a} if ({a} < {b} or {a} != {a} or ({a} == {b} and math.copysign(1.0, {a}) < 0))" \
        f" else {b})"
