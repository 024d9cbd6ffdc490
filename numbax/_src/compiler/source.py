"""Source-text helpers shared by every backend: values, dtypes and casts as Python source, and the
header each generated module opens with (versions, backend, the jaxpr it implements)."""
from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from numbax._src import core
from numbax._src.core import Jaxpr
from numbax._src.version import __version__


def dtype_ctor(dtype: np.dtype) -> str:
    """The numpy scalar type of `dtype` as source (`np.float32`, `np.bool_`)."""
    return "np.bool_" if dtype == np.bool_ else f"np.{np.dtype(dtype).name}"


def render_scalar(value: Any, dtype: np.dtype) -> str:
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


def runtime_value(x: bool | int | str) -> str:
    """A flag, count or index (a Python value, or a name in the source) as a value of fixed
    type where generated code calls a runtime function, not a literal: Numba compiles a callee
    again for each literal argument (and its callees, the literal passed on), where a value
    makes one compile serve every flag, count and shape, and the driver's calls of the same
    functions outside loops (which pass Python ints and bools) too."""
    return f"np.bool_({x})" if isinstance(x, bool) else f"np.int64({x})"


def runtime_shape(shape: tuple) -> str:
    """`shape` as a tuple of int64 values (`runtime_value`: a literal tuple compiled a sort or
    an LU again for every shape)."""
    return "(" + "".join(f"{runtime_value(d)}, " for d in shape) + ")"


def _float(x: Any) -> str:
    x = float(x)
    if math.isnan(x):
        return "math.nan"
    if math.isinf(x):
        return "math.inf" if x > 0 else "-math.inf"
    return repr(x)


def cast(dtype: np.dtype, expr: str) -> str:
    """`expr` converted to `dtype` (booleans are left as they are)."""
    return expr if np.dtype(dtype) == np.bool_ else f"{dtype_ctor(dtype)}({expr})"


def render_value(value: Any) -> str:
    """Params as Python source: ints, floats, bools, None, tuples, dtypes, enum-like strings."""
    if isinstance(value, np.dtype):
        return f"np.dtype({value.name!r})"
    if isinstance(value, type) and issubclass(value, np.generic):
        return f"np.dtype({np.dtype(value).name!r})"
    if isinstance(value, tuple):
        inner = ", ".join(render_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, float) and not math.isfinite(value):
        return "np.nan" if math.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    if isinstance(value, (bool, int, float, type(None), np.integer, np.floating, np.bool_)):
        return repr(value.item() if isinstance(value, np.generic) else value)
    if isinstance(value, str) and value.isidentifier():
        return repr(value)
    raise NotImplementedError(f"jit: cannot render parameter of type {type(value).__name__}")


def jaxpr_comment(jaxpr: Jaxpr, names: core.PrintNames) -> str:
    """The jaxpr as `# `-prefixed lines, printed with `names` (which the body's comments share)."""
    text = core.pp_jaxpr_lines(jaxpr, names, 0, inline_ok=True).replace("\n", "\n# ")
    return f"# {text}"


def version_line(backend: str, *tags: str) -> str:
    """The first line of a generated module: numbax and Numba versions, backend, tags."""
    return " | ".join([f"# numbax {__version__}", f"numba {numba.__version__}", backend, *tags])


def clamped_start(start: str, n: int, k: int) -> str:
    """`start` clamped into [0, n - k], where a block of `k` elements of an axis of `n` begins
    as dynamic_slice and dynamic_update_slice clamp it (rendered for Numba)."""
    return f"min(max({start}, 0), {n - k})"


def clamped_slice(start: str, n: int, k: int) -> str:
    """The slice of `k` elements of an axis of `n` at `start` clamped (`clamped_start`)."""
    lo = clamped_start(start, n, k)
    return f"{lo}:{lo} + {k}"
