"""Programs from JAX's documentation and examples (tests/compat/programs/) run on numbax as
`import jax` and compared with JAX 0.10.2's recorded outputs
(tests/data/compat_programs_jax_reference.json, written by
tests/data/make_compat_programs_reference.py)."""
from __future__ import annotations

import json
import pathlib

import pytest

from tests.compat.as_jax import numbax_as_jax
from tests.compat.programs import assert_matches, encode, load_all

REFERENCE = json.loads((pathlib.Path(__file__).parents[1] / "data"
                        / "compat_programs_jax_reference.json").read_text())
PROGRAMS = load_all()


def _cases():
    for name in sorted(PROGRAMS):
        needs = PROGRAMS[name].needs
        marks = [pytest.mark.skip(reason=f"needs {needs}")] if needs else []
        yield pytest.param(name, marks=marks, id=name)


def test_every_program_is_recorded():
    assert sorted(PROGRAMS) == sorted(k for k in REFERENCE if k != "jax_version")


@pytest.mark.parametrize("name", _cases())
def test_program_matches_jax(name):
    prog = PROGRAMS[name]
    with numbax_as_jax():
        got = encode(prog.run())
    assert_matches(got, REFERENCE[name], prog.rtol, prog.atol, name)
