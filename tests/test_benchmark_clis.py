"""The scripts in benchmarks/ parse their arguments with argparse: `--help` prints a usage
message and exits 0 without running a benchmark, an unknown flag exits 2 with argparse's
error, and the scripts other scripts import parse nothing at import time.

Each check runs the script in a subprocess (cwd the repository root, PYTHONPATH=. and
JAX_PLATFORMS=cpu). Three representative scripts run in the fast path; every other script
with -m slow (each start imports numpy and most import numbax: 1-3 s)."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py"))
# a plain flag script, one with a hand-parsed past (sys.argv.index), and one with
# positionals that re-launches itself with extra argv
FAST = ("bench_runtime.py", "gemm_bench.py", "shard_map_mlp.py")
LIMIT_S = 60


def _run(script: str, *args: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu",
           "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}  # nothing shared between xdist workers
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=LIMIT_S)
    return proc, time.monotonic() - start


def _check_help(script: str, tmp_path: Path) -> None:
    proc, took = _run(script, "--help", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage" in proc.stdout.lower(), proc.stdout[-2000:]
    assert took < LIMIT_S


def _check_unknown_flag(script: str, tmp_path: Path) -> None:
    proc, _ = _run(script, "--no-such-flag", tmp_path=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
    assert "unrecognized arguments" in proc.stderr or "error" in proc.stderr, proc.stderr


def test_scripts_are_found():
    assert len(SCRIPTS) >= 40 and set(FAST) <= set(SCRIPTS)


@pytest.mark.parametrize("script", FAST)
def test_help_and_unknown_flag(script, tmp_path):
    _check_help(script, tmp_path)
    _check_unknown_flag(script, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in FAST])
def test_every_script_help_and_unknown_flag(script, tmp_path):
    _check_help(script, tmp_path)
    _check_unknown_flag(script, tmp_path)


def _imported_scripts() -> list[str]:
    """The benchmark scripts another benchmark script imports as a module."""
    sources = {name: (BENCHMARKS / name).read_text() for name in SCRIPTS}
    return sorted(name[:-3] for name in SCRIPTS if any(
        re.search(rf"^\s*(import|from)\s+{name[:-3]}\b", text, re.MULTILINE)
        for other, text in sources.items() if other != name))


def test_imported_scripts_parse_nothing_at_import(tmp_path):
    modules = _imported_scripts()
    assert {"bench_cpu", "bench_runtime", "bench_cuda"} <= set(modules)
    code = ("import sys; sys.argv = ['x', '--no-such-flag']; sys.path.insert(0, 'benchmarks')\n"
            + "".join(f"import {m}\n" for m in modules) + "print('imported')")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu",
           "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=LIMIT_S)
    assert proc.returncode == 0 and "imported" in proc.stdout, proc.stderr[-2000:]
