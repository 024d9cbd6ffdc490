"""The CUDA backend under Numba's CUDA simulator (test-only), plus the no-GPU error paths.

The simulator is chosen when numba.cuda is first imported, so the checks run in child processes
started with NUMBA_ENABLE_CUDASIM=1 (sim_checks.py, sim_matrix.py), one per group, and each check
and matrix row is reported as its own test; this session's own numba.cuda state is never
touched. Marked slow (about 8 minutes on 2 cores): `pytest -m "not slow"` (what CI runs) leaves
them out and runs FAST_PATH's few checks instead."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compiler.cuda import sim_checks

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent


def _run(code_or_file: list[str], **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    full.update(PYTHONPATH=str(ROOT), NUMBAX_COMPILATION_CACHE="0", **env)
    return subprocess.run([sys.executable, *code_or_file], env=full, capture_output=True,
                          text=True, timeout=900, cwd=ROOT)


def _group(name: str) -> str:
    """Checks run in three child processes (one pytest-xdist worker each, --dist loadgroup):
    the sort checks, the linear-algebra checks and the rest (each ~3 minutes on 2 cores)."""
    return "sort" if name.startswith("sort") else "linalg" if name.startswith("linalg") else "rest"


@functools.cache
def _results(group: str) -> dict[str, dict]:
    """Every check of `group`, run once in one simulator child process, by name."""
    return _checks(tuple(n for n in sim_checks.CHECKS if _group(n) == group))


def _checks(names: tuple[str, ...]) -> dict[str, dict]:
    """The checks `names`, run in one simulator child process, by name."""
    out = _run([str(HERE / "sim_checks.py"), *names], NUMBA_ENABLE_CUDASIM="1")
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["check"]] = r
    assert results, f"simulator run produced no results:\n{out.stderr[-3000:]}"
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xdist_group(f"cudasim-{_group(n)}"))
    for n in sim_checks.CHECKS])
def test_simulator_check(name):
    """One named check of tests/compiler/cuda/sim_checks*.py under the CUDA simulator."""
    r = _results(_group(name)).get(name)
    assert r is not None, f"{name} did not run (its process died earlier)"
    assert r["ok"], r.get("error")


# The fast path CI runs (`-m "not slow"`): a few checks across the backend's kinds of work
# (elementwise, reductions, products, fused kernels, transforms, host-driven control flow),
# and the gathers with broadcast indices that LU's row permutation and scans' gradients use
# (wrong on the GPU for a session while only the slow suite ran them).
FAST_PATH = ("unary_float", "reductions", "softmax_rows", "dot_general",
             "fused_selu_one_kernel", "grad_and_vmap_compose", "control_flow_host_driven",
             "along_axis_broadcast_indices", "fused_slices")


@pytest.mark.xdist_group("cudasim-fast")
def test_simulator_fast_path():
    """FAST_PATH's checks under the CUDA simulator; `pytest -m slow` runs all of them."""
    results = _checks(FAST_PATH)
    for name in FAST_PATH:
        assert name in results, f"{name} did not run (its process died earlier)"
        assert results[name]["ok"], (name, results[name].get("error"))


@functools.cache
def _matrix() -> dict[str, dict]:
    """Every row of the primitive matrix (and its vmap rows) under jit(backend="gpu"), run once
    in one simulator child process, by row id."""
    out = _run([str(HERE / "sim_matrix.py")], NUMBA_ENABLE_CUDASIM="1")
    rows = {r["row"]: r for r in (json.loads(line) for line in out.stdout.splitlines()
                                  if line.startswith("{"))}
    assert rows, f"the matrix run produced no rows:\n{out.stderr[-3000:]}"
    return rows


def _matrix_ids() -> list[str]:
    from tests.lax.test_matrix import CASES, ROWS

    rows = [(name, i) for name, i in ROWS if CASES[name][i].gpu]
    ids = [f"jit:{name}:{i}" for name, i in rows]
    return ids + [f"vmap:{name}:{i}" for name, i in rows if CASES[name][i].vmap]


@pytest.mark.slow
@pytest.mark.xdist_group("cudasim-matrix")
@pytest.mark.parametrize("row", _matrix_ids())
def test_primitive_matrix_row_under_simulator(row):
    """A row of tests/lax/test_matrix.py under jit(backend="gpu") equals the CPU backend's jit
    (equations without a CUDA lowering run on the host, with a warning)."""
    r = _matrix().get(row)
    assert r is not None, f"{row} did not run"
    assert r["outcome"] == "ok", f"{r['outcome']}\n{r.get('error')}"


NO_GPU = """
import numpy as np, numbax
assert numbax.default_backend() == "cpu"
for call in (lambda: numbax.devices("gpu"), lambda: numbax.jit(lambda x: x + 1,
             backend="gpu")(np.ones(3))):
    try:
        call()
    except RuntimeError as e:
        print("ERR", e)
    else:
        raise SystemExit("no RuntimeError")
np.testing.assert_array_equal(np.asarray(numbax.jit(lambda x: x + 1)(np.ones(3))), 2.0)
print("CPU OK")
"""


def test_missing_gpu_is_a_clear_runtime_error():
    out = _run(["-c", NO_GPU], CUDA_VISIBLE_DEVICES="")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("ERR numbax GPU backend:") == 2, out.stdout
    assert "CPU OK" in out.stdout


def test_missing_numba_cuda_says_how_to_install():
    code = "import sys; sys.modules['numba.cuda'] = None\n" + NO_GPU
    out = _run(["-c", code])
    assert out.returncode == 0, out.stderr[-2000:]
    assert "pip install numbax[cuda]" in out.stdout, out.stdout
