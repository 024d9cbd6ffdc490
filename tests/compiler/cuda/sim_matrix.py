"""Every row of the primitive test matrix (tests/lax/test_matrix.py) under jit(backend="gpu"),
and its vmap rows under jit(vmap(f), backend="gpu"), compared with the CPU backend's jit.

Run in a child process under NUMBA_ENABLE_CUDASIM=1 (test_cuda_sim.py does; it is also
runnable on a real GPU): `python tests/compiler/cuda/sim_matrix.py` prints one JSON line per
row with its outcome: "ok", "mismatch" or "error"."""
from __future__ import annotations

import json
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import numbax  # noqa: E402
from numbax._src.array import GpuArray  # noqa: E402
from tests.compiler.cuda import sim_support  # noqa: E402
from tests.lax.test_matrix import CASES, ROWS  # noqa: E402

sim_support.prepare()
# the simulator runs uint32 arithmetic in numpy scalars: threefry's wrapping adds warn
warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)


def _tol(dtype: np.dtype) -> dict:
    # libdevice's float64 math is within a few ulp of numpy's; float32 keeps float32 math
    if dtype in (np.float32, np.complex64):
        return dict(rtol=3e-5, atol=3e-6)
    return dict(rtol=1e-10, atol=1e-12)


def _compare(got, want) -> None:
    g_leaves, w_leaves = numbax.tree.leaves(got), numbax.tree.leaves(want)
    assert len(g_leaves) == len(w_leaves), (len(g_leaves), len(w_leaves))
    for g, w in zip(g_leaves, w_leaves, strict=True):
        assert isinstance(g, GpuArray), f"a {type(g).__name__} came back, not a GpuArray"
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, equal_nan=True, **_tol(g.dtype))
        else:
            np.testing.assert_array_equal(g, w)


def _batched(args: tuple) -> tuple:
    return tuple(np.stack([a, a * 0 + np.roll(np.asarray(a), 1)]) if np.ndim(a) else
                 np.stack([a, a]) for a in args)


def run_row(name: str, i: int, mode: str) -> dict:
    case = CASES[name][i]
    fn, args = case.fn, case.args
    if mode == "vmap":
        fn, args = numbax.vmap(case.fn), _batched(case.args)
    try:
        want = numbax.jit(fn)(*args)
        got = numbax.jit(fn, backend="gpu")(*args)
        _compare(got, want)
    except AssertionError:
        return {"row": f"{mode}:{name}:{i}", "outcome": "mismatch",
                "error": traceback.format_exc(limit=1)[-1500:]}
    except Exception:
        return {"row": f"{mode}:{name}:{i}", "outcome": "error",
                "error": traceback.format_exc(limit=4)[-1500:]}
    return {"row": f"{mode}:{name}:{i}", "outcome": "ok"}


def main(argv: list[str]) -> int:
    sim_support.full_precision_products()
    names = set(argv)
    for name, i in ROWS:
        if (names and name not in names) or not CASES[name][i].gpu:
            continue
        modes = ["jit", "vmap"] if CASES[name][i].vmap else ["jit"]
        for mode in modes:
            print(json.dumps(run_row(name, i, mode)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
