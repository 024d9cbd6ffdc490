"""Convolution, pooling and FFT timings: numbax.jit vs jax.jit (when jax is importable), same
run, issue 18's shapes. Medians of a few runs after a warm-up call; no asserts.

    python benchmarks/bench_conv.py            # the issue's shapes
    python benchmarks/bench_conv.py --quick    # small shapes (a smoke test)
    python benchmarks/bench_conv.py --only fft # cases whose name contains "fft"
    python benchmarks/bench_conv.py --separate # each library in a process of its own

numbax and JAX take turns within each repeat (the machine is shared: both see the same load).
With --separate each library runs alone in a fresh process, one after the other: neither
one's threads (XLA's pool, Numba's) are still spinning while the other one runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numbax  # noqa: E402
import numbax.numpy as bnp  # noqa: E402
from numbax import lax as blax  # noqa: E402
from numbax.example_libraries import stax as bstax  # noqa: E402

try:
    import jax  # noqa: E402
    import jax.numpy as jjnp  # noqa: E402
    from jax import lax as jlax  # noqa: E402
    from jax.example_libraries import stax as jstax  # noqa: E402
except ImportError:  # JAX is a bench-only peer
    jax = None

RNG = np.random.default_rng(0)


def interleaved(calls: dict, repeat: int) -> dict[str, float]:
    """Median seconds of each callable, after a warm-up call of each, the libraries taking
    turns within every repeat so both see the same machine load."""
    for fn, args in calls.values():
        fn(*args)  # warm up (traces and compiles)
    samples: dict[str, list[float]] = {lib: [] for lib in calls}
    for _ in range(repeat):
        for lib, (fn, args) in calls.items():
            t0 = time.perf_counter()
            fn(*args)
            samples[lib].append(time.perf_counter() - t0)
    return {lib: statistics.median(times) for lib, times in samples.items()}


def _ready(out):
    """Blocks on every leaf (JAX dispatches asynchronously)."""
    for leaf in jax.tree_util.tree_leaves(out):
        leaf.block_until_ready()
    return out


def conv_cases(lax, jnp, quick: bool):
    n, hw, c = (4, 14, 16) if quick else (32, 56, 64)
    x = RNG.normal(size=(n, hw, hw, c)).astype(np.float32)
    w = (RNG.normal(size=(3, 3, c, c)) / np.sqrt(9 * c)).astype(np.float32)
    ct = RNG.normal(size=(n, hw, hw, c)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")

    def fwd(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)

    def loss(x, w):
        return jnp.sum(fwd(x, w) * ct)

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def pool_loss(x):
        return jnp.sum(pool(x) ** 2)

    return {
        f"conv fwd NHWC 3x3 SAME {x.shape}->{c}": (fwd, (x, w)),
        "conv grad wrt input and kernel": ("grad01", loss, (x, w)),
        f"max-pool 2x2 fwd {x.shape}": (pool, (x,)),
        "max-pool 2x2 bwd": ("grad0", pool_loss, (x,)),
    }


def fft_cases(jnp, quick: bool):
    n = 1 << (14 if quick else 20)
    side = 128 if quick else 1024
    z = (RNG.normal(size=n) + 1j * RNG.normal(size=n)).astype(np.complex64)
    img = RNG.normal(size=(side, side)).astype(np.float32)
    return {f"fft complex64 2^{n.bit_length() - 1}": (jnp.fft.fft, (z,)),
            f"rfft2 float32 {side}x{side}": (jnp.fft.rfft2, (img,))}


def convnet_case(stax, jnp, grad, random_key, quick: bool):
    """JAX's MNIST convnet training step (softmax cross-entropy, SGD), whole step jitted."""
    batch = 16 if quick else 128
    init, apply = stax.serial(stax.Conv(32, (3, 3)), stax.Relu, stax.Conv(64, (3, 3)),
                              stax.Relu, stax.MaxPool((2, 2), (2, 2)), stax.Flatten,
                              stax.Dense(128), stax.Relu, stax.Dense(10), stax.LogSoftmax)
    _, params = init(random_key, (-1, 28, 28, 1))
    params = [tuple(np.asarray(p, np.float32) for p in layer) for layer in params]
    x = RNG.normal(size=(batch, 28, 28, 1)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, size=batch)]

    def step(params, x, y):
        def loss(ps):
            return -jnp.mean(jnp.sum(apply(ps, x) * y, axis=1))

        grads = grad(loss)(params)
        return [tuple(p - 0.01 * g for p, g in zip(layer, glayer))
                for layer, glayer in zip(params, grads)]

    return {f"stax MNIST convnet train step, batch {batch}": (step, (params, x, y))}


def _build(cases, lib: str):
    """name -> a jitted, blocking callable and its args, for numbax or jax."""
    jit = numbax.jit if lib == "numbax" else jax.jit
    grad = numbax.grad if lib == "numbax" else jax.grad
    out = {}
    for name, spec in cases.items():
        if spec[0] in ("grad0", "grad01"):
            kind, fn, args = spec
            fn = grad(fn, argnums=(0, 1) if kind == "grad01" else 0)
        else:
            fn, args = spec
        compiled = jit(fn)
        call = compiled if lib == "numbax" else (lambda *a, f=compiled: _ready(f(*a)))
        out[name] = (call, args)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes")
    parser.add_argument("--only", default="", help="run cases whose name contains this")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--separate", action="store_true",
                        help="time each library in a process of its own")
    parser.add_argument("--lib", default="", help=argparse.SUPPRESS)  # a --separate child
    args = parser.parse_args()
    if args.separate:
        _print_separate(args)
        return

    libs = {"numbax": (blax, bnp, bstax, numbax.random.PRNGKey(0), numbax.grad)}
    if jax is not None:
        libs["jax"] = (jlax, jjnp, jstax, jax.random.PRNGKey(0), jax.grad)
    if args.lib:
        libs = {args.lib: libs[args.lib]}
    built: dict[str, dict] = {}
    for lib, (lax, jnp, stax, key, grad) in libs.items():
        cases = {**conv_cases(lax, jnp, args.quick), **fft_cases(jnp, args.quick),
                 **convnet_case(stax, jnp, grad, key, args.quick)}
        cases = {k: v for k, v in cases.items() if args.only in k}
        for name, call in _build(cases, lib).items():
            built.setdefault(name, {})[lib] = call
    load = os.getloadavg()[0]
    timings = {name: interleaved(calls, args.repeat) for name, calls in built.items()}
    if args.lib:
        print(json.dumps({name: row[args.lib] for name, row in timings.items()}))
        return
    print(f"{os.cpu_count()} cores, load average {load:.1f} -> {os.getloadavg()[0]:.1f}; "
          f"numbax {numbax.__version__}"
          + (f", jax {jax.__version__}" if jax is not None else ", jax not importable")
          + f"; medians of {args.repeat}, libraries interleaved")
    _print_table(timings)


def _print_separate(args) -> None:
    """Each library alone in a fresh child process (numbax first), then the same table."""
    rows: dict[str, dict[str, float]] = {}
    libs = ["numbax"] + (["jax"] if jax is not None else [])
    for lib in libs:
        cmd = [sys.executable, __file__, "--lib", lib, "--repeat", str(args.repeat),
               "--only", args.only] + (["--quick"] if args.quick else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for name, t in json.loads(out.strip().splitlines()[-1]).items():
            rows.setdefault(name, {})[lib] = t
    print(f"{os.cpu_count()} cores; numbax {numbax.__version__}"
          + (f", jax {jax.__version__}" if jax is not None else ", jax not importable")
          + f"; medians of {args.repeat}, each library alone in its own process")
    _print_table(rows)


def _print_table(rows: dict[str, dict[str, float]]) -> None:
    """One line per case: numbax's and JAX's median milliseconds and their ratio."""
    print(f"{'case':52s} {'numbax ms':>10s} {'jax ms':>10s} {'ratio':>7s}")
    for name, row in rows.items():
        ours, theirs = row["numbax"] * 1e3, row.get("jax")
        if theirs is None:
            print(f"{name:52s} {ours:10.2f} {'-':>10s} {'-':>7s}")
        else:
            print(f"{name:52s} {ours:10.2f} {theirs * 1e3:10.2f} {ours / (theirs * 1e3):7.2f}")


if __name__ == "__main__":
    main()
