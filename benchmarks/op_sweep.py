"""What else users call: 29 elementwise functions on 1e6 float32 and 25 common ops at 1000²
and similar sizes, numbax's jit against jax.jit in one process (medians, and the ratio).

    JAX_PLATFORMS=cpu python benchmarks/op_sweep.py [--only name,name] [--calls N]

bench_runtime.py times the issue's rows; this sweep looks for the ones nobody listed
(docs/performance.md, "A sweep of common functions and ops"). Both runtimes' threads share
the cores in one process, so a row moves ±30 % between runs on a 2-core machine; compare
trees in fresh processes taking turns before believing a difference.
"""
from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jjnp
import numpy as np
from settle import settled

import numbax
import numbax.numpy as jnp

RNG = np.random.default_rng(0)
V = RNG.standard_normal(1_000_000).astype(np.float32)
POSITIVE = np.abs(V) + np.float32(0.1)
UNIT = np.tanh(V)  # inside arcsin's and arccos's domain
A = RNG.standard_normal((1000, 1000)).astype(np.float32)
B = RNG.standard_normal((64, 128, 128)).astype(np.float32)
X = RNG.standard_normal((2048, 784)).astype(np.float32)
INDEX = RNG.integers(0, 1000, 100_000)


def _lib(np_like):
    """(numpy-like module, nn, scipy.special) of numbax or jax."""
    if np_like is jnp:
        return jnp, numbax.nn, numbax.scipy.special
    return jjnp, jax.nn, jax.scipy.special


# name -> (function of (np, nn, special) giving the program, its arguments)
ELEMENTWISE = {
    **{name: ((lambda n: lambda m, nn, sp: getattr(m, n))(name), (V,))
       for name in ("exp", "tanh", "sin", "cos", "tan", "sinh", "cosh", "log1p", "expm1",
                    "arctan", "abs")},
    **{name: ((lambda n: lambda m, nn, sp: getattr(m, n))(name), (UNIT,))
       for name in ("arcsin", "arccos")},
    "arctan2": (lambda m, nn, sp: lambda v: m.arctan2(v, 0.5 - v), (V,)),
    **{name: ((lambda n: lambda m, nn, sp: getattr(m, n))(name), (POSITIVE,))
       for name in ("log", "sqrt")},
    **{name: ((lambda n: lambda m, nn, sp: getattr(nn, n))(name), (V,))
       for name in ("gelu", "softplus", "silu", "relu", "log_sigmoid", "mish", "elu")},
    "gelu_exact": (lambda m, nn, sp: lambda v: nn.gelu(v, approximate=False), (V,)),
    "erf": (lambda m, nn, sp: sp.erf, (V,)),
    "power 2.5": (lambda m, nn, sp: lambda v: m.power(v, 2.5), (POSITIVE,)),
    "x ** 3": (lambda m, nn, sp: lambda v: v ** 3, (V,)),
    "where": (lambda m, nn, sp: lambda v: m.where(v > 0, v, 0.1 * v), (V,)),
    "logaddexp": (lambda m, nn, sp: lambda v: m.logaddexp(v, 0.5 * v), (V,)),
}
OPS = {
    "mean axis 0": (lambda m, nn, sp: lambda a: m.mean(a, 0), (A,)),
    "var axis 1": (lambda m, nn, sp: lambda a: m.var(a, 1), (A,)),
    "argmax axis 1": (lambda m, nn, sp: lambda a: m.argmax(a, 1), (A,)),
    "cumsum 1e6": (lambda m, nn, sp: m.cumsum, (V,)),
    "sort 1e6": (lambda m, nn, sp: m.sort, (V,)),
    "argsort 1e5": (lambda m, nn, sp: lambda v: m.argsort(v[:100_000]), (V,)),
    "top_k 10 of 1000^2 rows": (lambda m, nn, sp: lambda a: (  # (the values)
        numbax.lax if m is jnp else jax.lax).top_k(a, 10)[0], (A,)),
    "take 1e5 rows": (lambda m, nn, sp: lambda a, i: m.take(a, i, axis=0), (A, INDEX)),
    "transpose + add": (lambda m, nn, sp: lambda a: a.T + a, (A,)),
    "bmm 64 x 128^3": (lambda m, nn, sp: m.matmul, (B, B)),
    "einsum bij,bjk": (lambda m, nn, sp: lambda b: m.einsum("bij,bjk->bik", b, b), (B,)),
    "layer norm 2048 x 784": (lambda m, nn, sp: lambda x: (x - x.mean(-1, keepdims=True))
                              / m.sqrt(x.var(-1, keepdims=True) + 1e-5), (X,)),
    "x @ x.T 2048 x 784": (lambda m, nn, sp: lambda x: x @ x.T, (X,)),
    "2 x 2 max pool by reshape": (lambda m, nn, sp: lambda a: a.reshape(500, 2, 500, 2)
                                  .max((1, 3)), (A,)),
    "where + sum": (lambda m, nn, sp: lambda a: m.where(a > 0, a, 0).sum(), (A,)),
    "clip + std": (lambda m, nn, sp: lambda a: m.clip(a, -1, 1).std(), (A,)),
    "concatenate": (lambda m, nn, sp: lambda a: m.concatenate([a, a, a], 1), (A,)),
    "pad": (lambda m, nn, sp: lambda a: m.pad(a, 2), (A,)),
    "roll": (lambda m, nn, sp: lambda a: m.roll(a, 3, 1), (A,)),
    "one_hot 1e5 x 10": (lambda m, nn, sp: lambda i: nn.one_hot(i % 10, 10), (INDEX,)),
    "logsumexp axis 0": (lambda m, nn, sp: lambda a: sp.logsumexp(a, 0), (A,)),
    "norm axis 1": (lambda m, nn, sp: lambda a: m.linalg.norm(a, axis=1), (A,)),
    "diff": (lambda m, nn, sp: lambda a: m.diff(a, axis=0), (A,)),
    "triu": (lambda m, nn, sp: m.triu, (A,)),
    "outer 1000": (lambda m, nn, sp: lambda v: m.outer(v[:1000], v[:1000]), (V,)),
}


WARMUP_S = 0.3  # steady state: a kernel's parallel variant compiles after ~20 ms of its
# estimated serial work (runtime/threads.py, PARALLEL_TIER_NS); a training loop passes that in
# its first steps, a 40-call timing of a 0.75 ms kernel did not


def median_us(fn, args, calls: int) -> float:
    def call():
        fn(*args).block_until_ready()

    def timed():
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return float(np.median(times)) * 1e6

    call()  # compiles
    # (numbax compiles a variant in a helper process meanwhile: settle.py waits for it)
    return settled(timed, call, (), WARMUP_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated row names (substrings)")
    parser.add_argument("--calls", type=int, default=60, help="timed calls per row and side")
    args = parser.parse_args()
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    print(f"op_sweep | {time.strftime('%Y-%m-%d %H:%M')} | {numbax.device_count()} device(s) "
          f"| jax {jax.__version__}")
    print(f"{'row':28s} {'numbax us':>10s} {'jax us':>10s} {'ratio':>6s}")
    for name, (make, inputs) in {**ELEMENTWISE, **OPS}.items():
        if wanted and not any(w in name for w in wanted):
            continue
        ours = numbax.jit(make(*_lib(jnp)))
        theirs = jax.jit(make(*_lib(jjnp)))
        t_ours = median_us(ours, [numbax.device_put(x) for x in inputs], args.calls)
        t_theirs = median_us(theirs, [jax.device_put(x) for x in inputs], args.calls)
        print(f"{name:28s} {t_ours:10.0f} {t_theirs:10.0f} {t_ours / t_theirs:6.2f}")


if __name__ == "__main__":
    main()
