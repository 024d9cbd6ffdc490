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


def _group(name: str) -> str:
    """Checks run in three child processes (pytest-xdist spreads them over its workers): the
    sort checks, the linear-algebra checks, and the rest (each ~3 minutes on 2 cores)."""
    return "sort" if name.startswith("sort") else "linalg" if name.startswith("linalg") else "rest"


@pytest.mark.parametrize("group", ["sort", "linalg", "rest"])
def test_checks_under_simulator(group):
    """The checks of tests/cuda/sim_checks*.py in one child process per group."""
    names = [n for n in sim_checks.CHECKS if _group(n) == group]
    out = _run([str(ROOT / "tests" / "cuda" / "sim_checks.py"), *names],
               NUMBA_ENABLE_CUDASIM="1")
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["check"]] = r
    assert results, f"simulator run produced no results:\n{out.stderr[-3000:]}"
    missing = sorted(set(names) - set(results))
    failed = [f"{name}:\n{r.get('error')}" for name, r in results.items() if not r["ok"]]
    assert not missing and not failed, f"did not run: {missing}\n\n" + "\n\n".join(failed)


# Primitives the CUDA backend refuses (NotImplementedError naming the primitive): kept equal to
# what the matrix run finds, so the README's and performance.md's lists stay true.
GPU_REFUSED: set[str] = {  # linear algebra: compiler/cuda_linalg.py
    # JAX-name primitives added by compat-lax with no CUDA lowering yet
    "approx_top_k", "clz", "create_token", "cumlogsumexp", "eq_to", "le_to", "lt_to", "mulhi",
    "optimization_barrier", "reduce_precision", "reduce_xor", "rng_bit_generator",
    "rng_uniform", "scatter-sub", "split", "stack", "tile", "top_k", "unstack"}


def test_primitive_matrix_under_simulator():
    """Every row of tests/lax/test_matrix.py (and its vmap rows) under jit(backend="gpu") equals
    the CPU backend's jit, or is refused with the backend's error (GPU_REFUSED, exactly)."""
    out = _run([str(ROOT / "tests" / "cuda" / "sim_matrix.py")], NUMBA_ENABLE_CUDASIM="1")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert rows, f"the matrix run produced no rows:\n{out.stderr[-3000:]}"
    bad = [f"{r['row']}: {r['outcome']}\n{r['error']}" for r in rows
           if r["outcome"] not in ("ok", "refused")]
    assert not bad, "\n\n".join(bad)
    refused = {r["row"].split(":")[1] for r in rows if r["outcome"] == "refused"}
    assert refused == GPU_REFUSED, (
        f"newly refused: {sorted(refused - GPU_REFUSED)}; "
        f"now lowered (drop from GPU_REFUSED): {sorted(GPU_REFUSED - refused)}")


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
