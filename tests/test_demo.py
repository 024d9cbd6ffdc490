"""`python -m numbax`, the README's first command, runs and shows each part of the tour."""
import os
import subprocess
import sys


def test_python_m_numbax_tour():
    out = subprocess.run([sys.executable, "-m", "numbax"], capture_output=True, text=True,
                         timeout=300, check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    text = out.stdout
    assert "devices: [CpuDevice(id=0)" in text
    assert "grad = 300.0, grad of grad = 60.0" in text
    assert "mean of per-example dW equals the batch gradient: True" in text
    assert "@njit" in text and "prange" in text and "fm.exp_f32" in text
    assert "\r" not in text  # into a pipe the progress lines are plain lines
