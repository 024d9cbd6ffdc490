"""The differential fuzzer in CI: a fixed-seed slice of random programs (about 30 s on 2
cores; benchmarks/fuzz_soak.py runs thousands), the programs it once failed on (each now a
regression test), and the CUDA simulator slice (slow)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.oracles import Skip, check
from tests.fuzz.programs import Input, Node, Program
from tests.fuzz.regressions import REGRESSIONS
from tests.fuzz.strategies import programs


def _slice(n: int) -> settings:
    """A fixed-seed slice of n programs (shrunk on failure, never read from a database)."""
    return settings(max_examples=n, derandomize=True, database=None, deadline=None,
                    print_blob=True, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.generate, Phase.shrink])


def _assert_clean(program: Program, backend: str | None = None) -> None:
    try:
        found = check(program, backend)
    except Skip:
        return
    assert not found, "\n".join([program.listing(), *map(str, found), repr(program)])


@_slice(20)
@given(programs(transform="jit"))
def test_fuzz_slice_jit(program):
    _assert_clean(program)


@_slice(6)
@given(programs(transform="vmap", max_nodes=4))
def test_fuzz_slice_vmap(program):
    _assert_clean(program)


@_slice(6)
@given(programs(transform="grad", max_nodes=3))
def test_fuzz_slice_grad(program):
    _assert_clean(program)


@_slice(6)
@given(programs(transform="jvp", max_nodes=3))
def test_fuzz_slice_jvp(program):
    _assert_clean(program)


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_fuzz_regression(name):
    """Programs on which an oracle once failed (tests/fuzz/regressions.py says what was wrong)."""
    _assert_clean(REGRESSIONS[name])


def test_reproducer_rebuilds_the_program():
    """`repr(program)` is what the soak prints as a reproducer: it must evaluate back."""
    p = REGRESSIONS[sorted(REGRESSIONS)[0]]
    assert eval(repr(p), {"Program": Program, "Node": Node, "Input": Input}) == p  # noqa: S307


@pytest.mark.slow
def test_fuzz_slice_cuda_simulator():
    """jit(backend="gpu") == jit on the CPU for a fixed-seed slice, under Numba's CUDA
    simulator (a child process: the simulator is chosen when numba.cuda is imported)."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "NUMBAX_COMPILATION_CACHE": "0",
           "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "fuzz_soak.py"),
                          "--programs", "60", "--chunk", "60", "--backend", "gpu",
                          "--transform", "jit", "--max-nodes", "3", "--seed", "7"],
                         env=env, capture_output=True, text=True, timeout=1800, cwd=root)
    assert "ran 60 distinct programs" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]
    assert " 0 minimal mismatches" in out.stdout, out.stdout[-6000:]
