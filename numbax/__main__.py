"""`python -m numbax`: a one-minute tour (devices, jit speed-up, grad, vmap, generated code)."""
from __future__ import annotations

import sys
import time

import numpy as np

import numbax
import numbax.numpy as jnp


def _progress(message: str) -> None:
    """A transient status line on a terminal; into a pipe or a log, a plain line instead (a
    carriage return would leave the line's debris in the file)."""
    if sys.stdout.isatty():
        sys.stdout.write(f"  … {message}\r")
        sys.stdout.flush()
    else:
        print(f"  … {message}", flush=True)


def _done() -> None:
    if sys.stdout.isatty():
        sys.stdout.write(" " * 72 + "\r")


def _median_seconds(fn, *args, repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        numbax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def selu_numpy(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def loss(params, x, y):
    w, b = params
    return jnp.mean((jnp.tanh(x @ w + b) - y) ** 2)


def main() -> None:
    print(f"numbax {numbax.__version__} — JAX's programming model, compiled by Numba")
    print(f"devices: {numbax.devices()}  (default backend: {numbax.default_backend()})\n")

    print("1. jit: selu on 1,000,000 float32 values")
    x = np.random.default_rng(0).normal(size=1_000_000).astype(np.float32)
    fast = numbax.jit(selu)
    _progress("compiling (first call; later runs load from the disk cache)")
    start = time.perf_counter()
    fast(x).block_until_ready()
    compile_s = time.perf_counter() - start
    _done()
    t_numbax = _median_seconds(fast, x)
    t_numpy = _median_seconds(selu_numpy, x)
    assert np.allclose(np.asarray(fast(x)), selu_numpy(x), rtol=1e-5, atol=1e-6)
    print(f"   first call {compile_s:.2f} s; numbax {t_numbax * 1e3:.2f} ms vs numpy "
          f"{t_numpy * 1e3:.2f} ms per call: {t_numpy / t_numbax:.1f}x faster\n")

    print("2. grad: d/dx x**3 at 10, and its second derivative")
    cube = lambda v: v ** 3  # noqa: E731
    print(f"   grad = {float(numbax.grad(cube)(10.0))}, "
          f"grad of grad = {float(numbax.grad(numbax.grad(cube))(10.0))}\n")

    print("3. vmap(grad): per-example gradients of a tiny model")
    rng = np.random.default_rng(1)
    params = (rng.normal(size=(3, 2)), np.zeros(2))
    xs, ys = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    per_example = numbax.jit(numbax.vmap(numbax.grad(loss), in_axes=(None, 0, 0)))
    _progress("compiling")
    gw, gb = per_example(params, xs, ys)
    _done()
    print(f"   dW per example: shape {gw.shape}, db per example: shape {gb.shape}")
    mean_grad = numbax.grad(loss)(params, xs, ys)
    close = np.allclose(np.asarray(gw).mean(0), np.asarray(mean_grad[0]))
    print(f"   mean of per-example dW equals the batch gradient: {close}\n")

    print("4. the generated source of one fused kernel (selu: one loop, no temporaries)")
    text = fast.lower(x).as_text()
    kernel = text[text.index("@njit"):text.index("# driver")].rstrip()
    print("   " + kernel.replace("\n", "\n   "))


if __name__ == "__main__":
    main()
