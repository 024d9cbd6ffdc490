"""Eager calls a notebook makes, numbax / JAX: loops called outside jit (JAX compiles every
one; numbax compiles the long ones, eager_loops.py, and runs the others' steps through
host_eval.py), `jit` of a fresh lambda (a cell run again), and single eager operations.
Each library runs in a process of its own (JAX_PLATFORMS=cpu); medians of 30 calls after
one, in ms. No asserts.

    PYTHONPATH=. python benchmarks/eager_calls.py [--only name,name]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def cases(jax, lax, jnp):
    """name -> call. Loops twice: with the same body function at every call (JAX keeps its
    trace and executable by the function) and with a lambda written in the call, new at
    every call (JAX traces and compiles again; numbax finds the program it built,
    compiler/program_key.py)."""
    x = jnp.ones(4, jnp.float32)
    xs = jnp.ones((5000, 4), jnp.float32)
    m, v = jnp.ones((8, 8), jnp.float32), jnp.ones(8, jnp.float32)

    def fori_body(i, c):
        return jnp.tanh(c * 0.9 + 0.1)

    def scan_body(c, v):
        return c * 0.9 + v, c

    def short_body(c, v):
        return jnp.tanh(c * 0.9 + v), c.sum()

    def while_cond(c):
        return c[0] < 20_000

    def while_body(c):
        return c[0] + 1, c[1] * 0.999 + 0.001

    return {
        "fori_loop 10k": lambda: lax.fori_loop(0, 10_000, fori_body, x),
        "fori_loop 10k, lambda": lambda: lax.fori_loop(
            0, 10_000, lambda i, c: jnp.tanh(c * 0.9 + 0.1), x),
        "scan 5000": lambda: lax.scan(scan_body, x, xs),
        "scan 5000, lambda": lambda: lax.scan(lambda c, v: (c * 0.9 + v, c), x, xs),
        "scan 200": lambda: lax.scan(short_body, x, xs[:200]),
        "while_loop 20k": lambda: lax.while_loop(while_cond, while_body, (0, x)),
        "while_loop 20k, lambdas": lambda: lax.while_loop(
            lambda c: c[0] < 20_000, lambda c: (c[0] + 1, c[1] * 0.999 + 0.001), (0, x)),
        "jit(fresh lambda)": lambda: jax.jit(lambda v: jnp.tanh(v * 2.0 + 1.0).sum())(x),
        "x * 0.999": lambda: x * 0.999,
        "jnp.tanh(x)": lambda: jnp.tanh(x),
        "m.sum(), 8 x 8": lambda: m.sum(),
        "m @ v, 8 x 8": lambda: m @ v,
        "jnp.where(v > 0, v, 0)": lambda: jnp.where(v > 0, v, 0.0),
        "m[1]": lambda: m[1],
    }


def run_one(lib: str, only: list[str] | None) -> None:
    if lib == "jax":
        import jax
        import jax.numpy as jnp
        from jax import lax
    else:
        import numbax as jax
        import numbax.numpy as jnp
        from numbax import lax
    for name, fn in cases(jax, lax, jnp).items():
        if only and not any(o in name for o in only):
            continue
        jax.block_until_ready(fn())
        times = []
        for _ in range(30):
            start = time.perf_counter()
            jax.block_until_ready(fn())
            times.append(time.perf_counter() - start)
        print(json.dumps({"name": name, "ms": 1e3 * float(np.median(times))}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", metavar="name,name", help="only these cases")
    parser.add_argument("--lib", choices=("numbax", "jax"), help=argparse.SUPPRESS)  # a child
    args = parser.parse_args()
    only = args.only.split(",") if args.only is not None else None
    if args.lib:
        return run_one(args.lib, only)
    results: dict[str, dict[str, float]] = {}
    for lib in ("numbax", "jax"):
        args = [sys.executable, __file__, "--lib", lib] + (["--only", ",".join(only)] if only
                                                           else [])
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        out = subprocess.run(args, capture_output=True, text=True, env=env).stdout
        for line in out.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                results.setdefault(row["name"], {})[lib] = row["ms"]
    print(f"eager_calls | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores")
    print(f"{'case':<24} {'numbax ms':>10} {'jax ms':>10} {'nbx/jax':>8}")
    for name, row in results.items():
        nb, jx = row.get("numbax", float("nan")), row.get("jax", float("nan"))
        print(f"{name:<24} {nb:>10.3f} {jx:>10.3f} {nb / jx:>8.2f}")


if __name__ == "__main__":
    main()
