"""numbax.jit vs numpy vs jax.jit on this machine, one run: medians and ratios (no asserts).

    PYTHONPATH=. python benchmarks/bench_cpu.py [--sweep] [--training]
"""
from __future__ import annotations

import argparse
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


def samples(fn, *args, repeat=15, min_time=0.02) -> list[float]:
    """Seconds per call: `repeat` samples, each a loop long enough to reach `min_time`
    (after one warm-up call, which compiles)."""
    fn(*args)
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        if time.perf_counter() - t0 >= min_time or n >= 1 << 16:
            break
        n *= 2
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        out.append((time.perf_counter() - t0) / n)
    return out


def median_time(fn, *args, repeat=15, min_time=0.02) -> float:
    return statistics.median(samples(fn, *args, repeat=repeat, min_time=min_time))


def _parallel_copy():
    from numba import njit, prange

    @njit(parallel=True)
    def copy(src, dst):
        for i in prange(src.shape[0]):
            dst[i] = src[i]

    return copy


def copy_bandwidth(n: int, dtype) -> float:
    """Bytes per second (read + write) of the faster of numpy's copy and a Numba prange copy
    of n elements: the ceiling an elementwise kernel of that size is compared with."""
    src = np.ones(n, dtype)
    dst = np.empty_like(src)
    copy = _parallel_copy()
    best = min(median_time(np.copyto, dst, src, repeat=9), median_time(copy, src, dst, repeat=9))
    return 2 * src.nbytes / best


ELEMENTWISE = {"selu": 1, "sigmoid": 1, "add": 2}  # inputs read per output written


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


def mlp_step(xp, grad, jit):
    """The issue-5 MLP step: 784-512-512-10, tanh, softmax cross-entropy, SGD, all jitted."""
    def loss(params, x, y):
        (w1, b1), (w2, b2), (w3, b3) = params
        h = xp.tanh(x @ w1 + b1)
        h = xp.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        m = xp.max(logits, axis=-1, keepdims=True)
        lse = xp.log(xp.sum(xp.exp(logits - m), axis=-1, keepdims=True)) + m
        return -xp.mean(xp.sum(y * (logits - lse), axis=-1))

    def step(params, x, y):
        g = grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]

    return jit(step)


def per_example_grads(xp, grad, jit, vmap):
    """Logistic regression per-example gradients: jit(vmap(grad(loss), (None, 0, 0)))."""
    def loss(w, x, y):
        z = xp.dot(x, w)
        return xp.log(1 + xp.exp(-z)) * y + xp.log(1 + xp.exp(z)) * (1 - y)

    return jit(vmap(grad(loss), in_axes=(None, 0, 0)))


def mlp_per_example_grads(xp, grad, jit, vmap):
    """MLP 64-128-10 (tanh, softmax cross-entropy) per-example gradients at batch 32."""
    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = xp.tanh(xp.dot(x, w1) + b1)
        logits = xp.dot(h, w2) + b2
        m = xp.max(logits, axis=-1, keepdims=True)
        lse = xp.log(xp.sum(xp.exp(logits - m), axis=-1, keepdims=True)) + m
        return -xp.sum(y * (logits - lse))

    return jit(vmap(grad(loss), in_axes=(None, 0, 0)))


def training_cases(rng):
    """(name, label, numbax fn, numbax args, jax fn or None, jax args) for the training rows."""
    sizes = [784, 512, 512, 10]
    params = [(rng.normal(size=(a, b)).astype(np.float32) * 0.05, np.zeros(b, np.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(128, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    xl, yl, wl = rng.normal(size=(569, 30)), rng.integers(0, 2, 569) * 1.0, np.zeros(30)
    nb_params = [(bnp.asarray(w), bnp.asarray(b)) for w, b in params]
    rows = [("mlp_step", "b128 float32", mlp_step(bnp, numbax.grad, numbax.jit),
             (nb_params, bnp.asarray(x), bnp.asarray(y)), None, (params, x, y)),
            ("pex_grad", "logreg 569x30 f64",
             per_example_grads(bnp, numbax.grad, numbax.jit, numbax.vmap),
             (bnp.asarray(wl), bnp.asarray(xl), bnp.asarray(yl)), None, (wl, xl, yl))]
    mp = [(rng.normal(size=(a, b)).astype(np.float32) * 0.1, np.zeros(b, np.float32))
          for a, b in ((64, 128), (128, 10))]
    xm = rng.normal(size=(32, 64)).astype(np.float32)
    ym = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]
    rows.append(("pex_grad", "mlp 64-128-10 b32 f32",
                 mlp_per_example_grads(bnp, numbax.grad, numbax.jit, numbax.vmap),
                 ([(bnp.asarray(w), bnp.asarray(b)) for w, b in mp], bnp.asarray(xm),
                  bnp.asarray(ym)), None, (mp, xm, ym)))
    if jax is not None:
        rows[2] = (*rows[2][:4],
                   _block(mlp_per_example_grads(jjnp, jax.grad, jax.jit, jax.vmap)), rows[2][5])
        rows[0] = (*rows[0][:4], _block(mlp_step(jjnp, jax.grad, jax.jit)), rows[0][5])
        rows[1] = (*rows[1][:4], _block(per_example_grads(jjnp, jax.grad, jax.jit, jax.vmap)),
                   rows[1][5])
    return rows


def reduction_sweep(rng) -> None:
    """Full sum / logsumexp, serial (PAR_REDUCE_THREADS=1) vs chunked prange (the thread
    count Numba has), by size: where the parallel threshold PAR_REDUCE_MIN should sit."""
    import numba

    from numbax._src.compiler.cpu import loops as codegen_cpu

    fns = cases(bnp)
    print(f"reduction sweep | {os.cpu_count()} cores | numba threads {numba.get_num_threads()}")
    print(f"{'case':<10} {'n':>9} {'serial':>10} {'parallel':>10} {'par/ser':>8}")
    saved = (codegen_cpu.PAR_REDUCE_THREADS, codegen_cpu.PAR_REDUCE_MIN,
             codegen_cpu.PAR_REDUCE_CHUNK_MIN)
    forced = max(3, numba.get_num_threads())  # rendered parallel even on 2 threads
    try:
        for n in (2**15, 2**16, 2**17, 2**18, 2**20, 10**7):
            x = bnp.asarray(rng.normal(size=n))
            for name in ("sum", "logsumexp"):
                times = []
                for threads, pmin, cmin in ((1, saved[1], saved[2]), (forced, 1, 2**12)):
                    codegen_cpu.PAR_REDUCE_THREADS = threads
                    codegen_cpu.PAR_REDUCE_MIN, codegen_cpu.PAR_REDUCE_CHUNK_MIN = pmin, cmin
                    times.append(median_time(numbax.jit(fns[name]), x, repeat=9))
                print(f"{name:<10} {n:>9} {times[0] * 1e6:>8.1f}us {times[1] * 1e6:>8.1f}us "
                      f"{times[1] / times[0]:>8.2f}")
    finally:
        (codegen_cpu.PAR_REDUCE_THREADS, codegen_cpu.PAR_REDUCE_MIN,
         codegen_cpu.PAR_REDUCE_CHUNK_MIN) = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep", action="store_true",
                        help="only serial vs chunked-prange full reductions by size")
    parser.add_argument("--training", action="store_true",
                        help="only the training / per-example-gradient rows")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    if args.sweep:  # serial vs chunked-prange full reductions by size
        reduction_sweep(rng)
        return
    if args.training:  # only the training / per-example-gradient rows
        for name, label, f_nb, nb_args, f_jx, j_args in training_cases(rng):
            t_nb = median_time(f_nb, *nb_args, repeat=7)
            t_jx = median_time(f_jx, *j_args, repeat=7) if f_jx is not None else float("nan")
            print(f"{name:<10} {label:<22} {t_nb * 1e6:>8.1f}us {t_jx * 1e6:>8.1f}us "
                  f"{t_nb / t_jx:>6.2f}")
        return
    inputs = []
    for n in (6, 7):
        for dt in (np.float32, np.float64):
            x = rng.normal(size=10**n).astype(dt)
            y = rng.normal(size=10**n).astype(dt)
            inputs += [(name, f"1e{n} {dt.__name__}", args) for name, args in
                       (("selu", (x,)), ("sigmoid", (x,)), ("add", (x, y)))]
    big = rng.normal(size=10**7)
    sq = rng.normal(size=(1000, 1000))
    sq32 = sq.astype(np.float32)
    inputs += [("sum", "1e7 float64", (big,)), ("logsumexp", "1e7 float64", (big,)),
               ("sum", "1000x1000 float64", (sq,)),
               ("logsumexp", "1000x1000 float64", (sq,)), ("softmax", "1000x1000 float64", (sq,)),
               ("matmul", "1000^2 float32", (sq32, sq32)),
               ("dispatch", "x+1, 10 float64", (np.arange(10.0),))]
    nb, npf = cases(bnp), cases(np)
    jx = cases(jjnp) if jax is not None else None
    print(f"numbax bench_cpu | {time.strftime('%Y-%m-%d')} | {os.cpu_count()} cores | "
          f"python {sys.version.split()[0]} | jax {jax.__version__ if jax else 'absent'}")
    # the machine's copy bandwidth: arrays 8x a large L3, so DRAM; elementwise rows are also
    # compared with a copy of their own size (in cache at 1e6)
    dram = copy_bandwidth(2**25, np.float64)
    print(f"copy bandwidth (256 MB arrays): {dram / 1e9:.1f} GB/s")
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
        line = (f"{name:<10} {label:<20} {t_nb * 1e6:>8.1f}us {t_np * 1e6:>8.1f}us "
                f"{t_jx * 1e6:>8.1f}us {t_nb / t_np:>7.2f} {t_nb / t_jx:>8.2f}")
        if name in ELEMENTWISE:
            moved = (ELEMENTWISE[name] + 1) * args[0].nbytes
            same = copy_bandwidth(args[0].size, args[0].dtype)
            line += (f"  {moved / t_nb / 1e9:.1f} GB/s: {moved / t_nb / dram:.0%} of the "
                     f"copy bandwidth, {moved / t_nb / same:.0%} of a same-size copy")
        print(line)
    for name, label, f_nb, nb_args, f_jx, j_args in training_cases(rng):
        t_nb = median_time(f_nb, *nb_args, repeat=7)
        t_jx = median_time(f_jx, *j_args, repeat=7) if f_jx is not None else float("nan")
        print(f"{name:<10} {label:<20} {t_nb * 1e6:>8.1f}us {'-':>10} "
              f"{t_jx * 1e6:>8.1f}us {'-':>7} {t_nb / t_jx:>8.2f}")
    if os.environ.get("OPENBLAS_CORETYPE"):
        _training_without_coretype()


def _training_without_coretype() -> None:
    """The training rows again in a child process without OPENBLAS_CORETYPE: this machine's
    setting (Haswell kernels on an AVX-512 CPU) roughly halves numpy's GEMM speed. The MLP
    step is GEMM-bound; jax.jit brings its own GEMMs, and so does numbax where `cpu_matmul`
    "auto" picks `gemm_cpu` (both with and without the setting on this VM), so the child
    shows what the setting changes for the rest."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--training"], env=env,
                         capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        print(f"{line}  (OPENBLAS_CORETYPE unset)")


if __name__ == "__main__":
    main()
