"""Cold compile of control flow under jit: each program in a fresh Python process with an empty
NUMBAX_CACHE_DIR, first call's wall time, import excluded. One untimed run of each program
first fills Numba's cache of numbax's runtime modules (an installation's steady state). With
--jax, jax.jit of the same program (x64) in its own process. No asserts.

    PYTHONPATH=. python benchmarks/control_flow_compile.py [--jax] [--rounds 2]

Programs: scipy.linalg.expm of a 4 x 4 matrix (a 5-way cond of Pade branches, a scan of
squarings), an RNN scan (tanh of two products per step), and a while loop of vector Newton
steps with a select.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROGRAMS = ("expm", "rnn_scan", "newton_while")


def _program(name: str, impl: str):
    import numpy as np

    if impl == "jax":
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg as sl
        from jax import lax

        jax.config.update("jax_enable_x64", True)
    else:
        import numbax as jax
        import numbax.numpy as jnp
        import numbax.scipy.linalg as sl
        from numbax import lax
    rng = np.random.default_rng(0)
    if name == "expm":
        return jax.jit(sl.expm), (rng.standard_normal((4, 4)),)
    if name == "rnn_scan":
        def rnn(w, u, xs):
            def cell(h, x):
                h = jnp.tanh(w @ h + u @ x)
                return h, jnp.sum(h * h)
            return lax.scan(cell, jnp.zeros(16), xs)
        return jax.jit(rnn), (rng.standard_normal((16, 16)) * 0.3,
                              rng.standard_normal((16, 8)) * 0.3, rng.standard_normal((20, 8)))

    def newton(a):
        def body(c):
            x, i = c
            step = (x * x - a) / (2.0 * x)
            return jnp.where(jnp.abs(step) > 1e-14, x - step, x), i + 1
        return lax.while_loop(lambda c: (c[1] < 60) & jnp.any(jnp.abs(c[0] * c[0] - a) > 1e-9),
                              body, (a + 1.0, 0))[0]
    return jax.jit(newton), (rng.uniform(1.0, 9.0, 64),)


def _child(name: str, impl: str) -> None:
    import numpy as np

    fn, args = _program(name, impl)
    start = time.perf_counter()
    out = fn(*args)
    np.asarray(out[0] if isinstance(out, tuple) else out)
    print(json.dumps({"seconds": time.perf_counter() - start}))


def _run(name: str, impl: str) -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBAX_CACHE_DIR": cache}
        out = subprocess.run([sys.executable, __file__, "--child", name, impl], env=env,
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])["seconds"]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jax", action="store_true", help="also jax.jit (x64)")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs per program")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "IMPL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return
    rounds = args.rounds
    impls = ["numbax", "jax"] if args.jax else ["numbax"]
    for name in PROGRAMS:
        cells = []
        for impl in impls:
            _run(name, impl)
            times = [_run(name, impl) for _ in range(rounds)]
            cells.append(f"{impl} {statistics.median(times):6.2f} s "
                         f"({min(times):.2f}-{max(times):.2f})")
        print(f"{name:13s} " + "   ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
