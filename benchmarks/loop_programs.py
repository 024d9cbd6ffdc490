"""Scans users write: `lax.associative_scan` under jit (cumulative maxima, sums along each axis, a
linear recurrence h_t = a_t h_{t-1} + b_t and its gradient) and eager loops (`fori_loop`,
`scan`, `while_loop` called without jit). Each library runs in a fresh process (an empty
numbax cache; JAX's own compile cache off): the first call (trace + compile + run) and the
median of later calls, then numbax / JAX. No asserts.

    PYTHONPATH=. python benchmarks/loop_programs.py [--no-jax]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def _cases(jax, jnp, lax) -> list[tuple[str, object, tuple]]:
    rng = np.random.default_rng(0)
    x3 = rng.normal(size=(3, 4, 64)).astype(np.float32)
    a = rng.uniform(size=(4, 301, 3)).astype(np.float32)
    b = rng.normal(size=(4, 301, 3)).astype(np.float32)
    v = rng.normal(size=1000).astype(np.float32)
    m = rng.normal(size=(1024, 256)).astype(np.float32)

    def recurrence(a, b):
        return lax.associative_scan(lambda e, n: (n[0] * e[0], n[0] * e[1] + n[1]), (a, b),
                                    axis=1)[1]

    def body(i, c):
        return c * 0.999 + jnp.sin(c)

    def step(c, xi):
        c = c * 0.9 + xi
        return c, c * 2

    x10 = np.ones(10, np.float32)
    xs = np.ones((5000, 10), np.float32)
    return [
        ("jit assoc. max (3,4,64) axis 2",
         jax.jit(lambda x: lax.associative_scan(jnp.maximum, x, axis=2)), (x3,)),
        ("jit assoc. recurrence (4,301,3)", jax.jit(recurrence), (a, b)),
        ("jit grad of the recurrence", jax.jit(jax.grad(lambda a, b: recurrence(a, b).sum(),
                                                        argnums=(0, 1))), (a, b)),
        ("jit assoc. add 1000", jax.jit(lambda x: lax.associative_scan(jnp.add, x)), (v,)),
        ("jit assoc. add (1024,256) axis 0",
         jax.jit(lambda x: lax.associative_scan(jnp.add, x)), (m,)),
        ("jit assoc. add (1024,256) axis 1",
         jax.jit(lambda x: lax.associative_scan(jnp.add, x, axis=1)), (m,)),
        ("eager fori_loop 10000 steps", lambda x: lax.fori_loop(0, 10_000, body, x), (x10,)),
        ("eager scan 5000 steps", lambda x, s: lax.scan(step, x, s), (x10, xs)),
        ("eager while_loop 20000 steps", lambda x: lax.while_loop(
            lambda c: c[0] < 20_000, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0),
            (np.int32(0), x)), (x10,)),
    ]


def child(impl: str) -> None:
    if impl == "jax":
        import jax
        import jax.numpy as jnp
        from jax import lax
        block = jax.block_until_ready
    else:
        import numbax as jax
        import numbax.numpy as jnp
        from numbax import lax
        block = jax.block_until_ready
    rows = {}
    for name, f, args in _cases(jax, jnp, lax):
        start = time.perf_counter()
        block(f(*args))
        first = time.perf_counter() - start
        times = []
        for _ in range(30):
            start = time.perf_counter()
            block(f(*args))
            times.append(time.perf_counter() - start)
        rows[name] = (first, float(np.median(times)))
    print(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-jax", action="store_true", help="numbax only")
    parser.add_argument("--child", choices=("numbax", "jax"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    impls = ["numbax"] if args.no_jax else ["numbax", "jax"]
    results = {}
    for impl in impls:
        with tempfile.TemporaryDirectory() as cache:
            env = {"NUMBAX_CACHE_DIR": cache, "JAX_PLATFORMS": "cpu",
                   "JAX_ENABLE_COMPILATION_CACHE": "false"}
            done = subprocess.run([sys.executable, __file__, "--child", impl], check=True,
                                  capture_output=True, text=True,
                                  env={**os.environ, **env})
            results[impl] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"loop_programs | {time.strftime('%Y-%m-%d %H:%M')} | "
          f"{os.cpu_count()} cores")
    print(f"{'case':<34} {'numbax first':>12} {'median':>10}" +
          (f" {'jax first':>10} {'median':>10} {'ratio':>6}" if "jax" in results else ""))
    for name, (first, med) in results["numbax"].items():
        line = f"{name:<34} {first:>11.2f}s {1e3 * med:>8.3f}ms"
        if "jax" in results:
            jf, jm = results["jax"][name]
            line += f" {jf:>9.2f}s {1e3 * jm:>8.3f}ms {med / jm:>6.2f}"
        print(line)


if __name__ == "__main__":
    main()
