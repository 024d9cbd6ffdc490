"""Programs taken from JAX's documentation and `examples/`, run unchanged on JAX (to record
tests/data/compat_programs_jax_reference.json) and on numbax (tests/compat/test_programs.py).

Each program is a function whose body imports `jax` as the tutorial does; the test runs it
with numbax installed under JAX's module names (numbax.install_as_jax), the recorder with
JAX itself. A program returns a dict of the values the tutorial prints or trains to, encoded
by `encode` into JSON (arrays keep their dtype and shape). Sizes are shrunk and downloads are
replaced by seeded synthetic data, so each program runs in about a second.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Program:
    name: str
    run: Callable[[], dict]
    source: str  # where in jax-ml/jax the code comes from
    rtol: float  # tolerances for floating values; integers, bools and strings match exactly
    atol: float
    needs: str | None  # what another branch adds: "jax.<name> ..." is skipped until numbax
    #                    has the name; any other text (a behaviour) until the lead un-skips it
    imports: tuple[str, ...]  # packages beyond jax and numpy (optax): skipped where absent
    heavy: bool  # compiling it takes over ~10 s on a cold cache: the default test runs it
    #              eagerly (disable_jit), the compiled run is opt-in (test_programs.py)


PROGRAMS: dict[str, Program] = {}


def program(source: str, rtol: float = 1e-6, atol: float = 1e-6, needs: str | None = None,
            imports: tuple[str, ...] = (), heavy: bool = False):
    """Registers a program: `source` names the JAX file it is taken from; `needs` marks one
    that waits on what another branch adds (recorded now, skipped in the test)."""
    def register(fn: Callable[[], dict]) -> Callable[[], dict]:
        name = fn.__name__
        assert name not in PROGRAMS, name
        PROGRAMS[name] = Program(name, fn, source, rtol, atol, needs, imports, heavy)
        return fn
    return register


def load_all() -> dict[str, Program]:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return PROGRAMS


def builtin_error(err: BaseException) -> dict:
    """The builtin exception classes an error is an instance of (JAX's and numbax's own
    classes subclass them): what a program that catches it by a builtin class sees. numbax's
    error matches JAX's when it is an instance of every builtin class JAX's is (numbax's shape
    errors are both TypeError and ValueError, so `except` clauses written for either work)."""
    names = sorted({c.__name__ for c in type(err).__mro__
                    if c.__module__ == "builtins" and c not in (BaseException, Exception,
                                                                 object)})
    return {"raises": names}


def raised(fn) -> dict | str:
    """What calling `fn` raises, as the builtin classes a program's `except` would see
    (builtin_error), or "no error"."""
    try:
        fn()
    except Exception as err:  # the programs record which builtin classes JAX raises
        return builtin_error(err)
    return "no error"


def encode(value: Any) -> Any:
    """A JSON form of a program's output: arrays as {dtype, shape, data}, containers kept."""
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        return {"py": type(value).__name__, "data": value}
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"program output {value!r} is not an array, number or string")
    if array.dtype.kind == "c":
        data = [array.real.ravel().tolist(), array.imag.ravel().tolist()]
    elif str(array.dtype) == "bfloat16":  # ml_dtypes' scalars are not JSON numbers
        data = array.astype(np.float32).ravel().tolist()
    else:
        data = array.ravel().tolist()
    return {"dtype": str(array.dtype), "shape": list(array.shape), "data": data}


def assert_matches(got: Any, want: Any, rtol: float, atol: float, where: str = "") -> None:
    """Compares an encoded numbax output with JAX's: same structure, dtypes and shapes,
    floats within rtol/atol (NaN matches NaN), everything else equal."""
    if isinstance(want, dict) and "data" in want:
        assert isinstance(got, dict) and "data" in got, f"{where}: got {got!r}, want {want!r}"
        if "py" in want:
            assert got.get("py") == want["py"], f"{where}: Python type {got.get('py')}"
            _assert_numbers(got["data"], want["data"], want["py"] == "float", rtol, atol, where)
            return
        assert got["dtype"] == want["dtype"], f"{where}: dtype {got['dtype']} != {want['dtype']}"
        assert got["shape"] == want["shape"], f"{where}: shape {got['shape']} != {want['shape']}"
        inexact = want["dtype"] == "bfloat16" or np.dtype(want["dtype"]).kind in "fc"
        _assert_numbers(got["data"], want["data"], inexact, rtol, atol, where)
    elif isinstance(want, dict) and "raises" in want:
        assert isinstance(got, dict) and set(want["raises"]) <= set(got.get("raises", ())), \
            f"{where}: raised {got}, JAX raised {want['raises']}"
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), \
            f"{where}: keys {sorted(got) if isinstance(got, dict) else got} != {sorted(want)}"
        for k in want:
            assert_matches(got[k], want[k], rtol, atol, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, rtol, atol, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _assert_numbers(got, want, inexact: bool, rtol: float, atol: float, where: str) -> None:
    g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if inexact:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(g, w, err_msg=where)
