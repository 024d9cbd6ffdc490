"""numbax.jit vs numpy vs jax.jit on this machine, one run: medians and ratios (no asserts)."""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numbax  # noqa: E402
import numbax.numpy as bnp  # noqa: E402

try:
    import jax  # noqa: E402
    import jax.numpy as jjnp  # noqa: E402
    jax.config.update("jax_enable_x64", True)
except ImportError:  # JAX is a bench-only peer
    jax = None


def median_time(fn, *args, repeat=15, min_time=0.02) -> float:
    fn(*args)  # warm (compile)
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        if time.perf_counter() - t0 >= min_time or n >= 1 << 16:
            break
        n *= 2
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def _block(f):
    return lambda *a: jax.block_until_ready(f(*a))


def cases(xp):
    def selu(x):
        return 1.0507009873554805 * xp.where(x > 0, x, 1.6732632423543772 * xp.expm1(x))

    def sigmoid(x):
        return 1 / (1 + xp.exp(-x))

    def add(x, y):
        return x + y

    def total(x):
        return xp.sum(x)

    def logsumexp(x):
        m = xp.max(x)
        return xp.log(xp.sum(xp.exp(x - m))) + m

    def softmax(x):
        e = xp.exp(x - xp.max(x, axis=1, keepdims=True))
        return e / xp.sum(e, axis=1, keepdims=True)

    def matmul(a, b):
        return a @ b

    def plus1(x):
        return x + 1

    return dict(selu=selu, sigmoid=sigmoid, add=add, sum=total, logsumexp=logsumexp,
                softmax=softmax, matmul=matmul, dispatch=plus1)


def main() -> None:
    rng = np.random.default_rng(0)
    inputs = []
    for dt in (np.float32, np.float64):
        x = rng.normal(size=10**6).astype(dt)
        y = rng.normal(size=10**6).astype(dt)
        inputs += [("selu", f"1e6 {dt.__name__}", (x,)), ("sigmoid", f"1e6 {dt.__name__}", (x,)),
                   ("add", f"1e6 {dt.__name__}", (x, y))]
    big = rng.normal(size=10**7)
    sq = rng.normal(size=(1000, 1000))
    sq32 = sq.astype(np.float32)
    inputs += [("sum", "1e7 float64", (big,)), ("logsumexp", "1e7 float64", (big,)),
               ("logsumexp", "1000x1000 float64", (sq,)), ("softmax", "1000x1000 float64", (sq,)),
               ("matmul", "1000^2 float32", (sq32, sq32)),
               ("dispatch", "x+1, 10 float64", (np.arange(10.0),))]
    nb, npf = cases(bnp), cases(np)
    jx = cases(jjnp) if jax is not None else None
    print(f"numbax bench_cpu | {time.strftime('%Y-%m-%d')} | {os.cpu_count()} cores | "
          f"python {sys.version.split()[0]} | jax {jax.__version__ if jax else 'absent'}")
    print(f"{'case':<10} {'input':<20} {'numbax':>10} {'numpy':>10} {'jax.jit':>10} "
          f"{'nbx/np':>7} {'nbx/jax':>8}")
    for name, label, args in inputs:
        f_nb = numbax.jit(nb[name])
        nb_args = tuple(bnp.asarray(a) for a in args)
        t_nb = median_time(f_nb, *nb_args)
        t_np = median_time(npf[name], *args)
        if jx is not None:
            f_jx = _block(jax.jit(jx[name]))
            j_args = tuple(jax.device_put(a) for a in args)
            t_jx = median_time(f_jx, *j_args)
        else:
            t_jx = float("nan")
        print(f"{name:<10} {label:<20} {t_nb * 1e6:>8.1f}us {t_np * 1e6:>8.1f}us "
              f"{t_jx * 1e6:>8.1f}us {t_nb / t_np:>7.2f} {t_nb / t_jx:>8.2f}")


if __name__ == "__main__":
    main()
