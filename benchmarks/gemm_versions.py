"""numbax's GEMM against an older copy of runtime/gemm.py, np.dot and jax.jit: GFLOP/s (best of
7) per shape and thread count, the old -> new pairs from one process (no asserts on time).

    PYTHONPATH=. python benchmarks/gemm_versions.py [--old PATH] [SHAPE ...]

`--old PATH`: a gemm.py from an earlier commit (`git show REV:numbax/_src/compiler/cpu/runtime/
gemm.py > /tmp/gemm_old.py`); without it only the current version runs. SHAPE names pick rows.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import numba
import numpy as np

from numbax._src.compiler.cpu.runtime import gemm as new

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_threads_probe  # noqa: E402  (its shapes and timer)

# the MLP's batch-128 product, the probe's shapes (batch-2048 products and squares), and 4000²
SHAPES = [("x@W1 b128", 128, 784, 512), *gemm_threads_probe.SHAPES, ("4000^2", 4000, 4000, 4000)]


def load_old(path: str):
    spec = importlib.util.spec_from_file_location("gemm_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gemm_old"] = module  # Numba's cache pickles refer to the module by name
    spec.loader.exec_module(module)
    return module


def best(fn) -> float:
    """Best seconds of 7 calls of `fn`, after one (gemm_threads_probe's timer)."""
    return gemm_threads_probe.timed_with_clock(fn)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", metavar="SHAPE",
                        help=f"rows to run (default: all): {[s[0] for s in SHAPES]}")
    parser.add_argument("--old", metavar="PATH", help="an older gemm.py to compare with")
    parsed = parser.parse_intermixed_args()
    args = parsed.shapes
    old = load_old(parsed.old) if parsed.old else None
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)  # float64 rows in float64
        jdot = jax.jit(jnp.dot)
    except ImportError:
        jax = None
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, cores // 2, cores} - {0})
    rng = np.random.default_rng(0)
    print(f"gemm_versions | {time.strftime('%Y-%m-%d %H:%M')} | {cores} cores | threads {counts}"
          f" | GFLOP/s{' old->new' if old else ''}", flush=True)
    for dtype in (np.float32, np.float64):
        for name, m, k, n in SHAPES:
            if (args and name not in args) or (dtype == np.float64 and "^2" not in name):
                continue
            if m >= 4000 and cores <= 2:
                continue
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            want = a.astype(np.float64) @ b
            flops = 2.0 * m * n * k
            cells = []
            for t in counts:
                if m >= 4000 and t < cores // 2:
                    continue  # seconds a call
                numba.set_num_threads(t)
                got = new.matmul(a, b, t)
                err = np.abs(got - want).max() / np.abs(want).max()
                assert err < 1e-5, (name, t, err)
                g_new = flops / best(lambda a=a, b=b, t=t: new.matmul(a, b, t)) / 1e9
                g_old = f"{flops / best(lambda a=a, b=b, t=t: old.matmul(a, b, t)) / 1e9:5.0f}->" \
                    if old else ""
                cells.append(f"{t}:{g_old}{g_new:5.0f}")
            numba.set_num_threads(cores)
            row = " ".join(cells) + \
                f" | np.dot {flops / best(lambda a=a, b=b: np.dot(a, b)) / 1e9:5.0f}"
            if jax is not None:
                ja, jb = jnp.asarray(a), jnp.asarray(b)
                jax_s = best(lambda ja=ja, jb=jb: jdot(ja, jb).block_until_ready())
                row += f" jax {flops / jax_s / 1e9:5.0f}"
            print(f"{np.dtype(dtype).name:7} {name:12} {row}", flush=True)


if __name__ == "__main__":
    main()
