"""Programs from JAX's documentation and examples (tests/compat/programs/) run on numbax as
`import jax` and compared with JAX 0.10.2's recorded outputs
(tests/data/compat_programs_jax_reference.json, written by
tests/data/make_compat_programs_reference.py)."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import pathlib

import pytest

import numbax
from tests.compat.as_jax import numbax_as_jax
from tests.compat.programs import assert_matches, encode, load_all

REFERENCE = json.loads((pathlib.Path(__file__).parents[1] / "data"
                        / "compat_programs_jax_reference.json").read_text())
PROGRAMS = load_all()


def _has_name(dotted: str) -> bool:
    """Whether numbax has JAX's public name `jax.a.b` (as numbax.a.b, submodules imported)."""
    obj, path = numbax, "numbax"
    for part in dotted.split(".")[1:]:
        if not hasattr(obj, part):
            try:
                importlib.import_module(f"{path}.{part}")
            except ImportError:
                return False
        obj, path = getattr(obj, part), f"{path}.{part}"
    return True


def _skip_reason(prog) -> str | None:
    missing = [m for m in prog.imports if importlib.util.find_spec(m) is None]
    if missing:
        return f"needs {', '.join(missing)} installed (pip install --no-deps {missing[0]})"
    if prog.needs is None:
        return None
    first = prog.needs.split()[0]
    if first.startswith("jax.") and _has_name(first):
        return None  # the name has landed: the program runs
    return f"needs {prog.needs}"


def _cases():
    for name in sorted(PROGRAMS):
        reason = _skip_reason(PROGRAMS[name])
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        yield pytest.param(name, marks=marks, id=name)


def test_every_program_is_recorded():
    assert sorted(PROGRAMS) == sorted(k for k in REFERENCE if k != "jax_version")


def _run(prog, jit: bool):
    with numbax_as_jax(), contextlib.ExitStack() as stack:
        if not jit:
            stack.enter_context(numbax.disable_jit())
        got = encode(prog.run())
    assert_matches(got, REFERENCE[prog.name], prog.rtol, prog.atol, prog.name)


@pytest.mark.parametrize("name", _cases())
def test_program_matches_jax(name):
    """Heavy programs (whole training loops under jit: a minute of Numba compiling on a cold
    cache) run here with jit disabled; their compiled run is the test below."""
    prog = PROGRAMS[name]
    _run(prog, jit=not prog.heavy)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("NUMBAX_COMPILED_PROGRAMS"),
                    reason="compiles whole training loops (minutes on a cold cache): set "
                           "NUMBAX_COMPILED_PROGRAMS=1 to run")
@pytest.mark.parametrize("name", [n for n in sorted(PROGRAMS) if PROGRAMS[n].heavy])
def test_heavy_program_compiled_matches_jax(name):
    _run(PROGRAMS[name], jit=True)
