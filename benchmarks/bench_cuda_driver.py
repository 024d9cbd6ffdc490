"""GPU driver-level speed of numbax's CUDA backend (issue 10): the tiled matmul against cupy
(cuBLAS) and JAX, the MLP train step and a scan loop against jax.jit, with where the time goes
(launches per step, Python driver time, per-kernel GPU time) and numba-cuda launch costs.

Run on a GPU machine: `PYTHONPATH=. python3 benchmarks/bench_cuda_driver.py [--checks]`.
--checks also runs the named simulator checks (tests/compiler/cuda/sim_checks.py) on the real card.
Prints compact lines; ratios are numbax speed / reference speed (>1: numbax faster).
"""
# ruff: noqa: B023  (benchmark closures run immediately, inside their loop iteration)
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU with numba

import numpy as np  # noqa: E402

T0 = time.perf_counter()
BUDGET_S = float(os.environ.get("BENCH_BUDGET_S", "170"))  # checks past it are skipped
CHECKS = ["dot_general", "transposes", "control_flow_host_driven", "grad_and_vmap_compose",
          "gather_scatter_device", "matmul_odd_sizes_and_tiles",
          "matmul_transposed_operands_no_transpose_kernel", "matmul_batch_dims_and_layouts",
          "matmul_tiny_and_empty_contraction_and_ints", "matmul_in_grad_and_scan_rows_in_place",
          "matmul_real_card_tiles"]


def say(*parts) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s]", *parts, flush=True)


def guarded(name: str):
    def deco(fn):
        try:
            fn()
        except Exception:  # noqa: BLE001 - a failing block is reported, the run goes on
            say(f"FAIL {name}:", traceback.format_exc()[-1200:].replace("\n", " // "))
        return fn
    return deco


def per_call(fn, sync, reps: int) -> float:
    """Seconds per call: one warm-up, `reps` calls, one synchronisation."""
    sync(fn())
    t = time.perf_counter()
    for _ in range(reps):
        out = fn()
    sync(out)
    return (time.perf_counter() - t) / reps


def nb_sync(out) -> None:
    from numbax import tree_util

    tree_util.tree_leaves(out)[0].block_until_ready()


def cp_sync(_out) -> None:
    import cupy as cp

    cp.cuda.Device().synchronize()


def executable(f):
    (exe,) = [e for e in f._cache.values() if hasattr(e, "driver")]
    return exe


def launch_profile(exe, args, reps: int = 5) -> list[tuple[str, float]]:
    """(launcher and kernel, median GPU ms) per launch of one driver call, timed by CUDA events
    around each launch (the driver's module-level launchers are wrapped for the duration)."""
    from numba import cuda

    mod = sys.modules[exe.driver.__module__]
    kinds = {name: f"{kname}[{config}]" for name, kname, config in
             re.findall(r"^(L\d+) = launcher\((\w+), (.*)\)$", exe.sources[-1], re.M)}
    times: dict[str, list[float]] = {}
    order: list[str] = []
    saved = {name: getattr(mod, name) for name in kinds}

    def wrap(name, f):
        def timed(*a):
            e0, e1 = cuda.event(), cuda.event()
            e0.record()
            f(*a)
            e1.record()
            e1.synchronize()
            times.setdefault(name, []).append(e0.elapsed_time(e1))
            order.append(name)
        return timed

    try:
        for name, f in saved.items():
            setattr(mod, name, wrap(name, f))
        for _ in range(reps):
            exe.driver(*exe.consts, *args)
    finally:
        for name, f in saved.items():
            setattr(mod, name, f)
    seen = list(dict.fromkeys(order))
    return [(f"{n} {kinds[n]} x{len(times[n]) // reps}", float(np.median(times[n])))
            for n in seen]


def main(run_checks: bool) -> None:
    import numbax
    from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

    gpu = numbax.devices("gpu")[0]
    import importlib.metadata as md

    say("card", gpu.device_kind, "| numba-cuda", md.version("numba-cuda"))
    import jax

    jax.config.update("jax_enable_x64", True)  # for the float64 matmul; f32 inputs stay f32

    @guarded("launch costs")
    def _():
        _launch_costs(cuda_runtime)

    @guarded("matmul")
    def _():
        _matmul(gpu)

    @guarded("MLP step")
    def _():
        _mlp(gpu)

    @guarded("scan")
    def _():
        _scan(gpu)

    if run_checks:
        _checks()


def _launch_costs(rt) -> None:
    from numba import cuda

    from numbax._src.compiler.cuda.runtime import launch as cuda_launch

    @cuda.jit
    def k3(a, b, c):
        i = cuda.grid(1)
        if i < a.size:
            c[i] = a[i] + b[i]

    a, b, c = (rt.empty(1024, np.float32) for _ in range(3))
    k3[4, 256](a, b, c)
    cuda.synchronize()
    n = 2000

    def timeit(f) -> float:
        f()
        cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            f()
        issue = time.perf_counter() - t
        cuda.synchronize()
        return issue / n * 1e6

    cfg = k3[4, 256]
    go = cuda_launch.launcher(k3, 4, 256)
    ordinary = timeit(lambda: k3[4, 256](a, b, c))
    hoisted = timeit(lambda: cfg(a, b, c))
    fast = timeit(lambda: go(a, b, c))
    empty = timeit(lambda: rt.empty(1024, np.float32))
    big = rt.empty(100 * 1024, np.float32)
    sl = timeit(lambda: big[3 * 1024:4 * 1024])
    cp = timeit(lambda: rt.copy_into(big[1024:2048], a))
    say(f"launch (3 array args) us/launch: k[g,b](...) {ordinary:.1f} | hoisted k[g,b] "
        f"{hoisted:.1f} | cuda_launch (packed after 3 launches) {fast:.1f}; rt.empty "
        f"{empty:.1f} us; device slice {sl:.1f} us; copy_into {cp:.1f} us")


def _matmul(gpu) -> None:
    import cupy as cp
    import jax
    import jax.numpy as xnp

    import numbax
    import numbax.numpy as jnp
    from numbax._src.compiler.cuda.kernels import matmul as cuda_matmul
    from numbax._src.compiler.cuda.loops import Config

    cfg = Config(False)
    for (m, k, n, dt, label, trans) in ((4096, 4096, 4096, np.float32, "4096^2 f32", False),
                                        (4096, 4096, 4096, np.float32, "4096^2 f32 xT@y", True),
                                        (784, 4096, 512, np.float32, "784x4096x512 f32 xT@y "
                                         "(MLP weight grad)", True),
                                        (1000, 1000, 1000, np.float64, "1000^2 f64", False)):
        rng = np.random.default_rng(1)
        a = rng.normal(size=(k, m) if trans else (m, k)).astype(dt)
        b = rng.normal(size=(k, n)).astype(dt)
        da, db = numbax.device_put(a, gpu), numbax.device_put(b, gpu)
        f = numbax.jit((lambda x, y: x.T @ y) if trans else jnp.matmul, backend="gpu")
        ca, cb = cp.asarray(a), cp.asarray(b)
        ja, jb = jax.device_put(a), jax.device_put(b)
        jf = jax.jit((lambda x, y: x.T @ y) if trans else xnp.matmul)
        jh = jax.jit((lambda x, y: xnp.matmul(x.T, y, precision="highest")) if trans else
                     (lambda x, y: xnp.matmul(x, y, precision="highest")))
        t_first = time.perf_counter()
        got = np.asarray(f(da, db))
        t_first = time.perf_counter() - t_first
        ref = (a.T if trans else a).astype(np.float64) @ b.astype(np.float64)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        flops = 2 * m * n * k
        reps = 10
        tn = per_call(lambda: f(da, db), nb_sync, reps)
        tc = per_call(lambda: (ca.T if trans else ca) @ cb, cp_sync, reps)
        tj = per_call(lambda: jf(ja, jb), nb_sync, reps)
        th = per_call(lambda: jh(ja, jb), nb_sync, reps)
        tile, splits, _ = cuda_matmul.choose_tiles(
            cuda_matmul.MatmulShape(1, m, n, k, (dt, dt, dt)), cfg)
        tf = lambda t: flops / t / 1e12  # noqa: E731
        say(f"matmul {label}: numbax {tf(tn):.1f} TFLOP/s ({tn * 1e3:.2f} ms, tile {tile} "
            f"splits {splits}, rel err {err:.1e}, first call {t_first:.1f} s) | cupy "
            f"{tf(tc):.1f} -> {tc / tn:.2f}x | jax highest {tf(th):.1f} -> {th / tn:.2f}x | "
            f"jax default {tf(tj):.1f} -> {tj / tn:.2f}x")


def _mlp(gpu) -> None:
    import jax
    import jax.numpy as xnp

    import numbax
    import numbax.numpy as jnp
    from numbax._src.compiler.cuda.runtime import launch as cuda_launch

    rng = np.random.default_rng(3)
    sizes = (784, 512, 512, 10)
    params = [(rng.normal(size=(m, n)).astype(np.float32) * 0.05, np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(4096, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 4096)]

    def make(np_, grad):
        def loss(params, x, y):
            h = x
            for w, b in params[:-1]:
                h = np_.tanh(h @ w + b)
            w, b = params[-1]
            logits = h @ w + b
            logits = logits - np_.max(logits, axis=1, keepdims=True)
            lse = np_.log(np_.sum(np_.exp(logits), axis=1, keepdims=True))
            return -np_.mean(np_.sum(y * (logits - lse), axis=1))

        def step(params, x, y):
            g = grad(loss)(params, x, y)
            return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)]
        return step

    fn = numbax.jit(make(jnp, numbax.grad), backend="gpu")
    jf = jax.jit(make(xnp, jax.grad))
    pn = numbax.device_put(params, gpu)
    xn, yn = numbax.device_put(x, gpu), numbax.device_put(y, gpu)
    pj, xj, yj = jax.device_put(params), jax.device_put(x), jax.device_put(y)
    t_first = time.perf_counter()
    out_n = fn(pn, xn, yn)
    nb_sync(out_n)
    t_first = time.perf_counter() - t_first
    out_j = jf(pj, xj, yj)
    err = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
              for a, b in zip(jax.tree_util.tree_leaves(out_j),
                              numbax.tree_util.tree_leaves(out_n)))
    reps = 20
    tn = per_call(lambda: fn(pn, xn, yn), nb_sync, reps)
    tj = per_call(lambda: jf(pj, xj, yj), nb_sync, reps)
    cuda_launch.FAST = False
    tslow = per_call(lambda: fn(pn, xn, yn), nb_sync, reps)
    cuda_launch.FAST = True
    exe = executable(fn)
    args = [leaf._dbuf for leaf in numbax.tree_util.tree_leaves((pn, xn, yn))]
    from numba import cuda

    cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        exe.driver(*exe.consts, *args)
    issue = (time.perf_counter() - t) / reps
    cuda.synchronize()
    prof = launch_profile(exe, args)
    gpu_ms = sum(ms for _, ms in prof)
    say(f"MLP step 4096x784-512-512-10 f32: numbax {tn * 1e3:.2f} ms (launcher fast path off "
        f"{tslow * 1e3:.2f} ms) | jax.jit {tj * 1e3:.2f} ms -> {tj / tn:.3f}x | max |diff| "
        f"{err:.1e} | first call {t_first:.1f} s")
    say(f"  per step: {sum(int(n.rsplit('x', 1)[1]) for n, _ in prof)} launches; driver issue "
        f"(Python, no sync) {issue * 1e3:.2f} ms; sum of per-kernel GPU times {gpu_ms:.2f} ms")
    for name, ms in sorted(prof, key=lambda p: -p[1])[:12]:
        say(f"    {ms:7.3f} ms  {name}")


def _scan(gpu) -> None:
    import jax

    import numbax
    import numbax.numpy as jnp
    from numbax import lax
    from numbax._src.compiler.cuda.runtime import launch as cuda_launch

    def loop(c, xs):
        return lax.scan(lambda c, x: (jnp.tanh(c * 0.9 + x), c.sum()), c, xs)

    steps = 100
    xs_np = np.random.default_rng(0).normal(size=(steps, 10**6)).astype(np.float32)
    xs = numbax.device_put(xs_np, gpu)
    c0 = numbax.device_put(np.zeros(10**6, np.float32), gpu)
    f = numbax.jit(loop, backend="gpu")
    jf = jax.jit(lambda c, xs: jax.lax.scan(
        lambda c, x: (jax.numpy.tanh(c * 0.9 + x), c.sum()), c, xs))
    jx, jc = jax.device_put(xs_np), jax.device_put(np.zeros(10**6, np.float32))
    got = f(c0, xs)
    want = jf(jc, jx)
    err = max(float(np.max(np.abs(np.asarray(got[q]) - np.asarray(want[q])))) for q in (0, 1))
    t = per_call(lambda: f(c0, xs), nb_sync, 5)
    tj = per_call(lambda: jf(jc, jx), nb_sync, 5)
    cuda_launch.FAST = False
    tslow = per_call(lambda: f(c0, xs), nb_sync, 5)
    cuda_launch.FAST = True
    say(f"scan {steps} steps x 1e6 f32 (tanh + sum): numbax {t / steps * 1e6:.0f} us/step "
        f"(fast path off {tslow / steps * 1e6:.0f}) | jax {tj / steps * 1e6:.1f} us/step -> "
        f"{tj / t:.3f}x | max |diff| {err:.1e}")


def _checks() -> None:
    from tests.compiler.cuda import sim_checks

    for name in CHECKS:
        if time.perf_counter() - T0 > BUDGET_S:
            say(f"check {name}: skipped (past {BUDGET_S} s)")
            continue
        try:
            sim_checks.CHECKS[name]()
            say(f"check {name}: ok")
        except Exception:  # noqa: BLE001
            say(f"check {name}: FAIL", traceback.format_exc()[-1500:].replace("\n", " // "))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checks", action="store_true",
                        help="also run the named simulator checks on the real card")
    main(parser.parse_args().checks)
