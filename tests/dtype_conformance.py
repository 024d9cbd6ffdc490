"""One probe, run on JAX (to record) and on numbax (to compare): every public function of
jax.numpy, jax.nn, jax.scipy.special and jax.lax called on a small array of each of 11 dtypes,
and 60 two-operand jax.numpy functions and 27 of jax.lax on two such arrays, with x64 on and
off. Each outcome is the
error class, or the result's dtype, shape and values (rounded to 6 significant digits).

    record: JAX_PLATFORMS=cpu python tests/data/make_dtype_conformance_reference.py (with jax)
    compare: tests/numpy/test_dtype_conformance.py
"""
from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np

DTYPES = {"bool": np.bool_, "i8": np.int8, "u8": np.uint8, "i32": np.int32, "u32": np.uint32,
          "i64": np.int64, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32,
          "f64": np.float64, "c64": np.complex64}
BASE = np.array([1, 0, 3, 2, 1, 0])
# Not probed: the answer depends on an unsorted `a` (undefined for both), or the function
# takes no array (a decorator, shapes) or reads its first argument as a string.
SKIP = frozenset({"searchsorted", "digitize", "vectorize", "einsum", "einsum_path",
                  "broadcast_shapes", "load", "fromfile", "fromfunction", "fromiter",
                  "from_dlpack", "printoptions", "set_printoptions", "get_printoptions",
                  "iinfo", "finfo", "dtype", "issubdtype", "isdtype", "result_type",
                  "promote_types", "can_cast", "save", "savez", "frompyfunc"})
BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "power",
          "float_power", "mod", "remainder", "fmod", "maximum", "minimum", "fmax", "fmin",
          "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "ldexp",
          "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm",
          "heaviside", "greater", "less", "equal", "not_equal", "greater_equal", "less_equal",
          "logical_and", "logical_or", "logical_xor", "divmod", "matmul", "dot", "inner",
          "outer", "kron", "cross", "vdot", "polyadd", "polymul", "convolve", "correlate",
          "isclose", "allclose", "array_equal", "where", "append", "union1d", "intersect1d",
          "setdiff1d", "isin", "interp", "tensordot",
          # lax's own (jax.numpy has pow and atan2 too)
          "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "eq", "ne", "lt", "le", "gt",
          "ge", "complex", "polygamma", "zeta", "igamma", "igammac", "and_", "or_", "xor",
          "shift_left", "shift_right_arithmetic", "shift_right_logical"]


def _values(v: np.ndarray) -> list | None:
    def short(x: float) -> float:
        return x if not math.isfinite(x) else float(f"{x:.6g}")

    if v.dtype.kind == "c":
        return [[short(float(z.real)), short(float(z.imag))]
                for z in np.asarray(v, np.complex128).ravel()]
    try:
        return [short(x) for x in np.asarray(v, np.float64).ravel().tolist()]
    except (TypeError, ValueError):
        return None


def _error_class(e: Exception) -> str:
    both = isinstance(e, TypeError) and isinstance(e, ValueError)
    return ("TypeError+ValueError" if both else "TypeError" if isinstance(e, TypeError)
            else "ValueError" if isinstance(e, ValueError) else type(e).__name__)


def outcome(call) -> list:
    """["err", class] | ["ok", dtype, shape, values] | ["other", type name]."""
    try:
        r = call()
    except Exception as e:  # noqa: BLE001 - the class is the outcome
        return ["err", _error_class(e)]
    if isinstance(r, (tuple, list)) or not hasattr(r, "dtype"):
        return ["other", type(r).__name__]
    v = np.asarray(r)
    return ["ok", str(r.dtype), list(v.shape), _values(v)]


MODULES = ("numpy", "nn", "scipy.special", "lax")


def unary_functions(jnp) -> dict:
    """Name -> function, for the one-operand cases of `jnp`."""
    return {name: getattr(jnp, name) for name in sorted(dir(jnp))
            if not name.startswith("_") and name not in SKIP and callable(getattr(jnp, name))
            and not isinstance(getattr(jnp, name), type)}


def calls(jnp) -> dict:
    """Case name -> a zero-argument call of a function of `jnp` (one of MODULES, of jax or
    numbax); the two-operand cases where it has those functions."""
    out = {}
    for name, fn in unary_functions(jnp).items():
        for key, d in DTYPES.items():
            out[f"{name}({key})"] = lambda fn=fn, d=d: fn(BASE.astype(d))
    for name in BINARY:
        fn = getattr(jnp, name, None)
        if fn is None:
            continue
        for key, d in DTYPES.items():
            a = BASE.astype(d)
            if name == "cross":
                a = a[:3]
            three = name in ("interp", "where")
            out[f"{name}({key},{key})"] = (lambda fn=fn, a=a, three=three:
                                          fn(a, a, a) if three else fn(a, a))
    return out


def probe(jax, jnp, x64: bool) -> dict:
    """Every case's outcome with jax_enable_x64 = x64 (restored after)."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", x64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return {name: outcome(call) for name, call in calls(jnp).items()}
    finally:
        jax.config.update("jax_enable_x64", before)
