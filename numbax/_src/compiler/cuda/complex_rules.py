"""Complex64/complex128 on the CUDA backend: the scalar rules of complex equations in fused loop
nests, and which complex equations the GPU runs at all (everything else is refused by
cuda_driver.check_lowerings with its NotImplementedError, naming the primitive and dtypes).

codegen_cuda consults `fusible` for equations with a complex operand or result, and `install`
makes its SCALAR_RULES use `COMPLEX_RULES` for them. Semantics are the CPU backend's (numba's
complex arithmetic and cmath, numpy 2's sign); multi-step functions are the device functions
of cuda_complex_device, which generated kernels reach as `cd.c_*`."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from numbax._src.compiler import fusion
from numbax._src.compiler.cpu.loops import dtype_ctor, render_scalar
from numbax._src.core import JaxprEqn, Var

ScalarRule = Callable[[list[str], JaxprEqn], str]


def involves_complex(eqn: JaxprEqn) -> bool:
    return any(v.aval.dtype.kind == "c" for v in [*eqn.invars, *eqn.outvars])


def _cd(fn: str) -> ScalarRule:
    return lambda a, e: f"cd.{fn}({', '.join(a)})"


def _one(e: JaxprEqn) -> str:
    return render_scalar(1, e.outvars[0].aval.dtype)


def _integer_pow(a: list[str], e: JaxprEqn) -> str:
    y = e.params["y"]
    if y == 0:
        return _one(e)
    if y in (1, 2, 3):
        return "(" + " * ".join([a[0]] * y) + ")"
    if y > 0:
        return f"cd.ipow({a[0]}, {y})"
    return f"cd.c_div({_one(e)}, cd.ipow({a[0]}, {-y}))"


def _conj(a: list[str], e: JaxprEqn) -> str:
    return f"{a[0]}.conjugate()" if e.invars[0].aval.dtype.kind == "c" else a[0]


def _convert(a: list[str], e: JaxprEqn) -> str:
    src, dst = e.invars[0].aval.dtype, np.dtype(e.params["new_dtype"])
    if dst == np.bool_:
        return f"({a[0]} != 0)"
    if src.kind == "c" and dst.kind != "c":
        return f"{a[0]}.real"
    return a[0]  # the caller casts to the new dtype (real -> complex: imaginary part 0)


_CMATH = ("exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
          "atan", "asinh", "acosh", "atanh", "log1p", "expm1", "exp2", "sign", "pow")

# Scalar expressions for equations with a complex operand or result; the caller casts the
# value to the output dtype (except comparisons and is_finite).
COMPLEX_RULES: dict[str, ScalarRule] = {
    **{name: _cd(f"c_{name}") for name in _CMATH},
    "add": lambda a, e: f"({a[0]} + {a[1]})",
    "add_any": lambda a, e: f"({a[0]} + {a[1]})",
    "sub": lambda a, e: f"({a[0]} - {a[1]})",
    "mul": lambda a, e: f"({a[0]} * {a[1]})",
    "div": _cd("c_div"),
    "neg": lambda a, e: f"(-{a[0]})",
    "square": lambda a, e: f"({a[0]} * {a[0]})",
    "integer_pow": _integer_pow,
    "rsqrt": lambda a, e: f"cd.c_div({_one(e)}, cd.c_sqrt({a[0]}))",
    "abs": lambda a, e: f"abs({a[0]})",  # math.hypot of the parts
    "is_finite": _cd("c_isfinite"),
    "real": lambda a, e: f"{a[0]}.real",
    "imag": lambda a, e: f"{a[0]}.imag",
    "conj": _conj,
    "complex": lambda a, e: f"complex({a[0]}, {a[1]})",
    "eq": lambda a, e: f"({a[0]} == {a[1]})",
    "ne": lambda a, e: f"({a[0]} != {a[1]})",
    "convert_element_type": _convert,
    "stop_gradient": lambda a, e: a[0],
}
# select_n keeps its rule: a conditional expression is dtype-blind.
_GENERIC = frozenset({"select_n"})
_REDUCTIONS = frozenset({"reduce_sum", "reduce_prod"})
# Library equations the GPU runs on complex buffers: views, copies and gathers move whole
# elements; dot_general's tiled kernel multiplies complex scalars; scatter-add adds the parts
# with float atomics (scatter_add_parts). Not here: scatter-mul/min/max (numba has no complex
# atomics), max/min/lt/.../sort (no order on complex; lax rejects argmax/cummax of complex).
LIBRARY = frozenset({
    "dot_general", "transpose", "reshape", "squeeze", "expand_dims", "broadcast_in_dim",
    "copy", "iota", "slice", "rev", "pad", "concatenate", "dynamic_slice",
    "dynamic_update_slice", "gather", "scatter", "scatter-add", "cumsum", "cumprod",
})


def fusible(eqn: JaxprEqn) -> bool:
    """Whether an equation with a complex operand or result can join a CUDA loop nest."""
    name = eqn.primitive.name
    if name in fusion.BROADCAST:
        return eqn.outvars[0].aval.ndim > 0
    if name in fusion.REDUCTIONS:
        return name in _REDUCTIONS
    return name in COMPLEX_RULES or name in _GENERIC


def library_ok(eqn: JaxprEqn) -> bool:
    """Whether cuda_driver's library lowering of `eqn` covers its dtypes (complex: LIBRARY)."""
    if not any(isinstance(v, Var) and v.aval.dtype.kind == "c"
               for v in [*eqn.invars, *eqn.outvars]):
        return True
    return eqn.primitive.name in LIBRARY


def shfl(fn: str, val: str, arg: str, dtype: np.dtype) -> str:
    """A warp shuffle (`fn`: cuda.shfl_xor_sync/shfl_sync) of a complex value: numba-cuda
    shuffles 32/64-bit ints and floats only, so the real and imaginary parts go separately."""
    re = f"{fn}(0xffffffff, {val}.real, {arg})"
    im = f"{fn}(0xffffffff, {val}.imag, {arg})"
    return f"{dtype_ctor(dtype)}(complex({re}, {im}))"


def scatter_add_parts(dst: str, dtype: np.dtype) -> list[str]:
    """Kernel lines adding update a2[i] into complex o0[dst]: numba has no complex atomics, so
    two float atomics add the real and imaginary parts through a float view of o0."""
    part = dtype_ctor(np.empty((), dtype).real.dtype)
    return ["v = a2[i]", f"of = o0.view({part})", f"q = 2 * ({dst})",
            "cuda.atomic.add(of, q, v.real)", "cuda.atomic.add(of, q + 1, v.imag)"]


def _dispatch(real_rule: ScalarRule | None, complex_rule: ScalarRule) -> ScalarRule:
    def rule(a: list[str], e: JaxprEqn) -> str:
        if real_rule is None or involves_complex(e):
            return complex_rule(a, e)
        return real_rule(a, e)

    return rule


def install(rules: dict[str, ScalarRule]) -> None:
    """Makes `rules` (codegen_cuda.SCALAR_RULES) use COMPLEX_RULES for complex equations."""
    for name, complex_rule in COMPLEX_RULES.items():
        rules[name] = _dispatch(rules.get(name), complex_rule)
