"""The CUDA backend under Numba's CUDA simulator (test-only), plus the no-GPU error paths.

The simulator is chosen when numba.cuda is first imported, so every check runs in one child
process started with NUMBA_ENABLE_CUDASIM=1 (tests/cuda/sim_checks.py); this session's own
numba.cuda state is never touched."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cuda import sim_checks

ROOT = Path(__file__).resolve().parents[2]


def _run(code_or_file: list[str], **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    full.update(PYTHONPATH=str(ROOT), NUMBAX_COMPILATION_CACHE="0", **env)
    return subprocess.run([sys.executable, *code_or_file], env=full, capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


@pytest.fixture(scope="module")
def sim_results() -> dict:
    out = _run([str(ROOT / "tests" / "cuda" / "sim_checks.py")], NUMBA_ENABLE_CUDASIM="1")
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["check"]] = r
    assert results, f"simulator run produced no results:\n{out.stderr[-3000:]}"
    return results


@pytest.mark.parametrize("name", list(sim_checks.CHECKS))
def test_under_simulator(sim_results, name):
    r = sim_results.get(name)
    assert r is not None, f"check {name} did not run"
    assert r["ok"], r.get("error")


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
