"""Issue 19's rows: numbax / jax.jit time at the sizes users run, float32, one process.

    python benchmarks/bench_runtime.py [--load N] [--only name,name] [--no-jax] [--warmup S]

`--load N` starts N busy-looping processes first (the "busy machine" rows); each row prints
the numbax and jax medians (several samples, each a loop of calls), their ratio, and numbax's
spread (min-max of the samples). JAX runs with JAX_PLATFORMS=cpu in the same process.
Each library first runs each row for S seconds (default 1; 0: one call): numbax's first calls
of a program time its products' grids, several slow ones among them, and compile a kernel's
threaded variant once it has run enough work (threads.PARALLEL_TIER_NS), so without it the
batch-2048 MLP step's samples were those first ~90 steps (16-core Xeon: 9.8-10.9 ms a step,
steady 8.0-8.8). A training loop's steady state is the figure that row stands for, so
numbax's warm-up also waits for its compile helper (settle.py) and warms again after it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from bench_cpu import _block, jax, jjnp, mlp_per_example_grads, mlp_step, per_example_grads, samples
from settle import settled, warm

import numbax  # bench_cpu imported it first, with JAX_PLATFORMS set
import numbax.numpy as bnp


def chain(x):
    """The asv suite's matmul chain: ten products, then an elementwise tail."""
    g = x
    for _ in range(10):
        g = g @ x
    return (g * g + g * g) / g


def selu(xp):
    return lambda x: 1.05 * xp.where(x > 0, x, 1.67 * xp.exp(x) - 1.67)


def logsumexp(xp):
    def f(x):
        m = xp.max(x)
        return xp.log(xp.sum(xp.exp(x - m))) + m
    return f


def softmax(xp):
    def f(x):
        e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)
    return f


def rows(rng):
    """(name, numbax callable, numbax args, jax callable, jax args)."""
    f32 = np.float32
    out = []

    def jitted(name, make, *args):
        j = _block(jax.jit(make(jjnp))) if jax else None
        out.append((name, numbax.jit(make(bnp)), args, j, args))

    sizes = [784, 512, 512, 10]
    params = [(rng.normal(size=(a, b)).astype(f32) * 0.05, np.zeros(b, f32))
              for a, b in zip(sizes[:-1], sizes[1:])]
    for batch in (128, 2048):
        x = rng.normal(size=(batch, 784)).astype(f32)
        y = np.eye(10, dtype=f32)[rng.integers(0, 10, batch)]
        j = _block(mlp_step(jjnp, jax.grad, jax.jit)) if jax else None
        out.append((f"mlp step b{batch}", mlp_step(bnp, numbax.grad, numbax.jit),
                    (params, x, y), j, (params, x, y)))
    bf16 = bnp.bfloat16.dtype  # the same step with bfloat16 parameters and data
    for batch in (128, 2048):
        bparams = [(w.astype(bf16), b.astype(bf16)) for w, b in params]
        x = rng.normal(size=(batch, 784)).astype(bf16)
        y = np.eye(10, dtype=bf16)[rng.integers(0, 10, batch)]
        j = _block(mlp_step(jjnp, jax.grad, jax.jit)) if jax else None
        out.append((f"mlp step bf16 b{batch}", mlp_step(bnp, numbax.grad, numbax.jit),
                    (bparams, x, y), j, (bparams, x, y)))
    mp = [(rng.normal(size=(a, b)).astype(f32) * 0.1, np.zeros(b, f32))
          for a, b in ((64, 128), (128, 10))]
    xm = rng.normal(size=(32, 64)).astype(f32)
    ym = np.eye(10, dtype=f32)[rng.integers(0, 10, 32)]
    j = _block(mlp_per_example_grads(jjnp, jax.grad, jax.jit, jax.vmap)) if jax else None
    out.append(("pex mlp b32", mlp_per_example_grads(bnp, numbax.grad, numbax.jit, numbax.vmap),
                (mp, xm, ym), j, (mp, xm, ym)))
    xl, yl, wl = (rng.normal(size=(569, 30)).astype(f32),
                  (rng.integers(0, 2, 569) * 1.0).astype(f32), np.zeros(30, f32))
    j = _block(per_example_grads(jjnp, jax.grad, jax.jit, jax.vmap)) if jax else None
    out.append(("pex logreg", per_example_grads(bnp, numbax.grad, numbax.jit, numbax.vmap),
                (wl, xl, yl), j, (wl, xl, yl)))
    for n in (1000, 2000):
        a = (rng.normal(size=(n, n)) / np.sqrt(n)).astype(f32)
        jitted(f"matmul {n}^2", lambda xp: (lambda m: m @ m), a)
    jitted("matmul 1000^2 bf16", lambda xp: (lambda m: m @ m),
           (rng.normal(size=(1000, 1000)) / np.sqrt(1000)).astype(bnp.bfloat16.dtype))
    q, k = ((rng.normal(size=(32, 8, 128, 64)) / 8).astype(bf16) for _ in range(2))
    jitted("attention scores bf16", lambda xp: (
        lambda a, b: xp.einsum("bhqd,bhkd->bhqk", a, b)), q, k)  # 256 heads of 128 x 64
    m16 = (rng.normal(size=(1000, 1000)) / np.sqrt(1000)).astype(bf16)
    out.append(("eager matmul 1000^2 bf16", lambda m: m @ m, (bnp.asarray(m16),),
                (lambda m: (m @ m).block_until_ready()) if jax else None,
                (jjnp.asarray(m16),) if jax else None))
    jitted("chain 500^2", lambda xp: chain,
           (rng.normal(size=(500, 500)) / np.sqrt(500)).astype(f32))
    big = rng.normal(size=10**7).astype(f32)
    sq = rng.normal(size=(1000, 1000)).astype(f32)
    jitted("sum 1e7", lambda xp: xp.sum, big)
    jitted("sum 1000^2", lambda xp: xp.sum, sq)
    jitted("logsumexp 1e7", logsumexp, big)
    jitted("logsumexp 1000^2", logsumexp, sq)
    jitted("softmax 1000^2", softmax, sq)
    for n in (6, 7):
        x = rng.normal(size=10**n).astype(f32)
        jitted(f"selu 1e{n}", selu, x)
        jitted(f"sigmoid 1e{n}", lambda xp: (lambda v: 1 / (1 + xp.exp(-v))), x)
        jitted(f"add 1e{n}", lambda xp: (lambda a, b: a + b), x, x[::-1].copy())
    jitted("dispatch np", lambda xp: (lambda v: v + 1), np.arange(10, dtype=f32))
    jitted("dispatch float", lambda xp: (lambda v: v + 1), 1.5)
    key_nb = numbax.random.PRNGKey(0)
    key_jx = jax.random.PRNGKey(0) if jax else None
    for n in (6, 7):
        for sampler in ("normal", "uniform"):
            nb = getattr(numbax.random, sampler)
            jx = getattr(jax.random, sampler) if jax else None
            out.append((f"eager {sampler} 1e{n}",
                        lambda k, nb=nb, n=n: nb(k, (10**n,), dtype=bnp.float32), (key_nb,),
                        (lambda k, jx=jx, n=n: jx(k, (10**n,), dtype=jjnp.float32)
                         .block_until_ready()) if jax else None, (key_jx,)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="busy-looping processes started first")
    parser.add_argument("--only", metavar="name,name",
                        help="rows whose name contains one of these")
    parser.add_argument("--no-jax", action="store_true", help="numbax's rows only")
    parser.add_argument("--warmup", type=float, default=1.0, metavar="S",
                        help="seconds each row runs untimed first (0: one call)")
    args = parser.parse_args()
    load, warmup = args.load, args.warmup
    only = args.only.split(",") if args.only is not None else None
    import numba

    print(f"bench_runtime | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores | "
          f"numba threads {numba.config.NUMBA_NUM_THREADS} | load {load} | "
          f"jax {jax.__version__ if jax else 'absent'}")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
    time.sleep(1.5 if load else 0)
    try:
        print(f"{'row':<20} {'numbax':>10} {'jax':>10} {'nbx/jax':>8}  numbax range")
        for name, f_nb, a_nb, f_jx, a_jx in rows(np.random.default_rng(0)):
            if only and not any(o in name for o in only):
                continue
            t_nb = settled(lambda f=f_nb, a=a_nb: samples(f, *a, repeat=9, min_time=0.05),
                           f_nb, a_nb, warmup)
            use_jax = f_jx is not None and not args.no_jax
            if use_jax:  # on JAX's device first, as its users keep them (no copy per call)
                a_jx = jax.tree_util.tree_map(
                    lambda v: jax.device_put(v) if isinstance(v, np.ndarray) else v, a_jx)
                warm(f_jx, a_jx, warmup)
            t_jx = samples(f_jx, *a_jx, repeat=9, min_time=0.05) if use_jax else [float("nan")]
            m_nb, m_jx = statistics.median(t_nb), statistics.median(t_jx)
            print(f"{name:<20} {m_nb * 1e6:>8.1f}us {m_jx * 1e6:>8.1f}us {m_nb / m_jx:>8.2f}  "
                  f"{min(t_nb) * 1e6:.1f}-{max(t_nb) * 1e6:.1f}us", flush=True)
    finally:
        for p in busy:
            p.kill()


if __name__ == "__main__":
    main()
