"""Executes every tutorial notebook in notebooks/ top to bottom, each in a fresh kernel."""
from __future__ import annotations

import os
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
for _module in ("ipykernel", "matplotlib", "sklearn", "tqdm"):
    pytest.importorskip(_module)
KernelManager = pytest.importorskip("jupyter_client").KernelManager

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
TIMEOUT_S = 300  # per cell; CI's whole budget is what bounds the sum
# Notebooks that draw figures: each must render at least one inline PNG.
PLOTTING = {
    "01_quickstart", "02_autodiff", "04_logistic_regression", "05_mlp_digits",
    "07_control_flow",
}


def _ids(paths: list[pathlib.Path]) -> list[str]:
    return [p.stem for p in paths]


def _outputs(nb) -> list:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def _stream_text(nb) -> str:
    return "".join(out.get("text", "") for out in _outputs(nb) if out.output_type == "stream")


def test_notebooks_found():
    assert NOTEBOOKS, f"no notebooks under {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_stripped(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name}: outputs must be stripped before committing"
            assert cell.execution_count is None, f"{path.name}: execution counts not stripped"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes(path, monkeypatch, tmp_path):
    # The kernel inherits this environment: a headless matplotlib backend, numbax importable
    # from the checkout even when not installed, and NUMBAX_CACHE_DIR (if set) as it is.
    monkeypatch.setenv("MPLBACKEND", "Agg")
    python_path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), python_path])))
    monkeypatch.delenv("NUMBAX_NUM_CPU_DEVICES", raising=False)
    nb = nbformat.read(path, as_version=4)
    # Unix sockets, not TCP ports: kernels started at once by two xdist workers raced for a
    # port ("Address already in use", then "Kernel didn't respond in 60 seconds").
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    client = nbclient.NotebookClient(
        nb, km=manager, timeout=TIMEOUT_S, kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    errors = [out for out in _outputs(nb) if out.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
    if path.stem in PLOTTING:
        images = [out for out in _outputs(nb) if "image/png" in out.get("data", {})]
        assert images, f"{path.name}: expected at least one inline figure"
    if path.stem == "08_gpu":
        text = _stream_text(nb)
        assert "CUDA" in text, f"{path.name}: prints neither GPU results nor the skip message"
