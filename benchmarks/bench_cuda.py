"""GPU benchmarks of numbax's CUDA backend against the copy ceiling, jax.jit and cupy.

Run on a GPU machine: `PYTHONPATH=. python3 benchmarks/bench_cuda.py [--check] [--cpu]`.
--check first runs tests/compiler/cuda/sim_checks.py's checks on the real GPU; --cpu adds numbax.jit
selu on the CPU with NUMBA_NUM_THREADS=1,4,16 (one subprocess each); --extra-only runs only
the checks (with --check), random.normal, scan and CuPy rows; --only=NAME,NAME runs only those
blocks (compile, selu, sigmoid, add, sum, softmax, logsumexp, matmul, mlp, normal, scan,
cupy); --plain-launch launches through numba-cuda's ordinary dispatch (cuda_launch.FAST off).
Prints a markdown table.
"""
# ruff: noqa: B023  (benchmark closures run immediately, inside their loop iteration)
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU with numba

import numpy as np  # noqa: E402

ROWS: list[tuple[str, str, str]] = []
ONLY: set[str] | None = None  # --only's blocks (main sets it; None: every block)


def want(block: str) -> bool:
    """Whether --only (if given) names this benchmark block."""
    return ONLY is None or block in ONLY


def row(name: str, value: str, note: str = "") -> None:
    ROWS.append((name, value, note))
    print(f"| {name} | {value} | {note} |", flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "bench_cuda.md"), "a") as f:
            f.write(f"| {name} | {value} | {note} |\n")


def guarded(name: str):
    """Runs a benchmark block; a failure becomes a FAIL row instead of ending the run."""
    def deco(fn):
        try:
            fn()
        except Exception:  # noqa: BLE001
            import traceback

            tb = traceback.format_exc()[-1500:].replace("|", "/").replace("\n", " // ")
            row(name, "FAIL", tb)
        return fn
    return deco


def timeit(fn, sync, reps: int = 20, trials: int = 5) -> float:
    """Seconds per call: one warm-up, then the median over `trials` of `reps` calls and one
    synchronisation (single trials of the same kernel varied by 10 % between runs)."""
    out = fn()
    sync(out)
    times = []
    for _ in range(trials):
        t = time.perf_counter()
        for _ in range(reps):
            out = fn()
        sync(out)
        times.append((time.perf_counter() - t) / reps)
    return statistics.median(times)


def nb_sync(out) -> None:
    out.block_until_ready()


jx_sync = nb_sync


def cp_sync(out) -> None:
    import cupy as cp

    cp.cuda.Device().synchronize()


def gpu_section(check: bool) -> None:
    import numbax
    import numbax.numpy as jnp
    from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

    gpu = numbax.devices("gpu")[0]
    row("card", gpu.device_kind, f"numba-cuda {_version('numba_cuda')}")
    if check:
        _checks()

    def selu(x):
        return 1.0507 * jnp.where(x > 0, x, 1.67326 * (jnp.exp(x) - 1))

    def sigmoid(x):
        return numbax.nn.sigmoid(x)

    # compile times (disk cache off for this process: real numba-cuda compiles)
    small = numbax.device_put(np.ones(1024, np.float32), gpu)
    compiles = (("first kernel (selu)", selu), ("later kernel (sigmoid)", sigmoid),
                ("later: sum (2 kernels)", jnp.sum), ("later: x*2+1", lambda x: x * 2 + 1))
    for label, f in compiles if want("compile") else ():
        @guarded(f"compile {label}")
        def _():
            t = time.perf_counter()
            numbax.jit(f, backend="gpu")(small).block_until_ready()
            row(f"compile {label}", f"{(time.perf_counter() - t) * 1e3:.0f} ms",
                "trace+codegen+nvvm")

    import cupy as cp
    import jax
    import jax.numpy as xnp

    n = 10**8
    host = np.random.default_rng(0).normal(size=n).astype(np.float32)
    d = numbax.device_put(host, gpu)
    d2 = numbax.device_put(host[::-1].copy(), gpu)
    c = cp.asarray(host)
    cdst = cp.empty_like(c)
    j = jax.device_put(host, jax.devices("gpu")[0])
    j2 = jax.device_put(host[::-1].copy(), jax.devices("gpu")[0])
    nbytes = 4 * n
    t = timeit(lambda: cp.copyto(cdst, c), cp_sync)
    ceiling = 2 * nbytes / t / 1e9
    row("copy ceiling (cupy copyto, 1e8 f32)", f"{ceiling:.0f} GB/s")
    t = timeit(lambda: cuda_runtime.empty(n, np.float32), lambda o: cuda_runtime.synchronize())
    row("numba device_array 400 MB alloc", f"{t * 1e3:.3f} ms", "paid by every jit call")
    cases = [("selu", selu, (d,), (j,), 2), ("sigmoid", sigmoid, (d,), (j,), 2),
             ("add", lambda a, b: a + b, (d, d2), (j, j2), 3)]
    for name, f, nargs, jargs, moved in cases:
        if want(name):
            guarded(name)(lambda: _elementwise(name, f, nargs, jargs, moved, ceiling, nbytes))
    if want("sum"):
        guarded("sum")(lambda: _sum(d, j, nbytes))
    for name in ("softmax", "logsumexp"):
        if want(name):
            guarded(name)(lambda: _softmax(host, gpu, name))
    if want("matmul"):
        guarded("matmul")(lambda: _matmul(gpu))
    if want("mlp"):
        guarded("MLP step")(lambda: _mlp(numbax, jnp, jax, xnp, gpu, nb_sync, jx_sync))


def _checks() -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "cuda"))
    import sim_checks

    for name, fn in sim_checks.CHECKS.items():
        try:
            fn()
            row(f"check {name}", "ok")
        except Exception as e:  # noqa: BLE001
            row(f"check {name}", "FAIL", repr(e)[:600].replace("|", "/").replace("\n", " "))


def _elementwise(name, f, nargs, jargs, moved, ceiling, nbytes):
    import jax
    import jax.numpy as xnp

    import numbax
    fn = numbax.jit(f, backend="gpu")
    jf = jax.jit(f if name != "sigmoid" else jax.nn.sigmoid)
    if name == "selu":
        jf = jax.jit(lambda x: 1.0507 * xnp.where(x > 0, x, 1.67326 * (xnp.exp(x) - 1)))
    np.testing.assert_allclose(np.asarray(fn(*nargs))[:1000],
                               np.asarray(jf(*jargs))[:1000], rtol=1e-5, atol=1e-6)
    tn = timeit(lambda: fn(*nargs), nb_sync)
    tj = timeit(lambda: jf(*jargs), jx_sync)
    gbn, gbj = moved * nbytes / tn / 1e9, moved * nbytes / tj / 1e9
    row(f"{name} 1e8 f32", f"numbax {gbn:.0f} GB/s ({tn * 1e3:.3f} ms)",
        f"{gbn / ceiling:.0%} of copy; jax {gbj:.0f} GB/s; numbax/jax {tj / tn:.2f}x")


def _sum(d, j, nbytes):
    import jax
    import jax.numpy as xnp

    import numbax
    import numbax.numpy as jnp
    fn, jf = numbax.jit(jnp.sum, backend="gpu"), jax.jit(xnp.sum)
    np.testing.assert_allclose(float(np.asarray(fn(d))), float(jf(j)), rtol=1e-4)
    tn, tj = timeit(lambda: fn(d), nb_sync), timeit(lambda: jf(j), jx_sync)
    row("sum 1e8 f32", f"numbax {nbytes / tn / 1e9:.0f} GB/s ({tn * 1e3:.3f} ms)",
        f"jax {nbytes / tj / 1e9:.0f} GB/s; numbax/jax {tj / tn:.2f}x")


def _softmax(host, gpu, what: str = "softmax"):
    """Row softmax (reads and writes the matrix) or row logsumexp (reads it) along the last
    axis, on a wide and a narrow shape."""
    import jax

    import numbax
    for shape in ((16384, 4096), (512 * 1024, 128)):
        m = host[: shape[0] * shape[1]].reshape(shape)
        dm = numbax.device_put(m, gpu)
        jm = jax.device_put(m, jax.devices("gpu")[0])
        if what == "softmax":
            fn = numbax.jit(lambda x: numbax.nn.softmax(x, axis=-1), backend="gpu")
            jf = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))
            mb = 2 * m.nbytes
        else:
            fn = numbax.jit(lambda x: numbax.nn.logsumexp(x, axis=-1), backend="gpu")
            jf = jax.jit(lambda x: jax.nn.logsumexp(x, axis=-1))
            mb = m.nbytes + 4 * shape[0]
        np.testing.assert_allclose(np.asarray(fn(dm))[:4], np.asarray(jf(jm))[:4], rtol=1e-4,
                                   atol=1e-7)
        tn, tj = timeit(lambda: fn(dm), nb_sync), timeit(lambda: jf(jm), jx_sync)
        row(f"{what} rows {shape} f32", f"numbax {mb / tn / 1e9:.0f} GB/s ({tn * 1e3:.3f} ms)",
            f"jax {mb / tj / 1e9:.0f} GB/s; numbax/jax {tj / tn:.2f}x")


def _matmul(gpu):
    import cupy as cp
    import jax
    import jax.numpy as xnp

    import numbax
    import numbax.numpy as jnp
    k = 4096
    a = np.random.default_rng(1).normal(size=(k, k)).astype(np.float32)
    b = np.random.default_rng(2).normal(size=(k, k)).astype(np.float32)
    da, db = numbax.device_put(a, gpu), numbax.device_put(b, gpu)
    ca, cb = cp.asarray(a), cp.asarray(b)
    ja, jb = jax.device_put(a), jax.device_put(b)
    fn = numbax.jit(jnp.matmul, backend="gpu")
    jf = jax.jit(xnp.matmul)
    jh = jax.jit(lambda x, y: xnp.matmul(x, y, precision="highest"))
    ref = np.asarray(jh(ja, jb))
    err = np.abs(np.asarray(fn(da, db)) - ref).max() / np.abs(ref).max()
    fh = numbax.jit(lambda x, y: jnp.matmul(x, y, precision="highest"), backend="gpu")
    err_h = np.abs(np.asarray(fh(da, db)) - ref).max() / np.abs(ref).max()
    flops = 2 * k**3
    tnh = timeit(lambda: fh(da, db), nb_sync, 5)
    tn = timeit(lambda: fn(da, db), nb_sync, 5)
    tc = timeit(lambda: cp.matmul(ca, cb), cp_sync, 5)
    tj = timeit(lambda: jf(ja, jb), jx_sync, 5)
    th = timeit(lambda: jh(ja, jb), jx_sync, 5)
    row("matmul 4096^2 f32", f"numbax {flops / tn / 1e12:.1f} TFLOP/s ({tn * 1e3:.2f} ms)",
        f"rel err {err:.1e}; cupy {flops / tc / 1e12:.1f} ({tc / tn:.2f}x); "
        f"jax default {flops / tj / 1e12:.1f} ({tj / tn:.2f}x); "
        f"jax highest {flops / th / 1e12:.1f} ({th / tn:.2f}x)")
    row("matmul 4096^2 f32 highest", f"numbax {flops / tnh / 1e12:.1f} TFLOP/s "
        f"({tnh * 1e3:.2f} ms)", f"rel err {err_h:.1e}; numbax/jax highest {tnh / th:.2f}; "
        f"numbax default / jax default {tn / tj:.2f}")
    # float16 inputs and output, float32 accumulation (JAX's and cuBLAS's rule)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    d16 = numbax.device_put(a16, gpu), numbax.device_put(b16, gpu)
    j16 = jax.device_put(a16), jax.device_put(b16)
    ref16 = a16.astype(np.float32) @ b16.astype(np.float32)
    got16 = np.asarray(fn(*d16)).astype(np.float32)
    err16 = np.abs(got16 - ref16).max() / np.abs(ref16).max()
    t16 = timeit(lambda: fn(*d16), nb_sync, 5)
    tj16 = timeit(lambda: jf(*j16), jx_sync, 5)
    row("matmul 4096^2 f16", f"numbax {flops / t16 / 1e12:.1f} TFLOP/s ({t16 * 1e3:.2f} ms)",
        f"rel err {err16:.1e}; jax {flops / tj16 / 1e12:.1f}; numbax/jax {t16 / tj16:.2f}")
    bf16 = jnp.bfloat16.dtype  # bfloat16 the same way (held as uint16 bits by numbax)
    abf, bbf = a.astype(bf16), b.astype(bf16)
    dbf = numbax.device_put(abf, gpu), numbax.device_put(bbf, gpu)
    jbf = jax.device_put(abf), jax.device_put(bbf)
    refbf = abf.astype(np.float32) @ bbf.astype(np.float32)
    errbf = np.abs(np.asarray(fn(*dbf)).astype(np.float32) - refbf).max() / np.abs(refbf).max()
    tbf = timeit(lambda: fn(*dbf), nb_sync, 5)
    tjbf = timeit(lambda: jf(*jbf), jx_sync, 5)
    row("matmul 4096^2 bf16", f"numbax {flops / tbf / 1e12:.1f} TFLOP/s ({tbf * 1e3:.2f} ms)",
        f"rel err {errbf:.1e}; jax {flops / tjbf / 1e12:.1f}; numbax/jax {tbf / tjbf:.2f}")


def _mlp(numbax, jnp, jax, xnp, gpu, nb_sync, jx_sync) -> None:
    rng = np.random.default_rng(3)
    sizes = (784, 512, 512, 10)
    params = [(rng.normal(size=(m, n)).astype(np.float32) * 0.05, np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(4096, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 4096)]

    def make(np_):
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
            return loss(params, x, y)
        return loss, step

    loss_n, _ = make(jnp)
    loss_j, _ = make(xnp)

    def step_n(params, x, y):
        g = numbax.grad(loss_n)(params, x, y)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)]

    def step_j(params, x, y):
        g = jax.grad(loss_j)(params, x, y)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)]

    pn = numbax.device_put(params, gpu)
    xn, yn = numbax.device_put(x, gpu), numbax.device_put(y, gpu)
    fn = numbax.jit(step_n, backend="gpu")
    jf = jax.jit(step_j)
    pj, xj, yj = jax.device_put(params), jax.device_put(x), jax.device_put(y)
    out_n, out_j = fn(pn, xn, yn), jf(pj, xj, yj)
    err = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
              for a, b in zip(jax.tree_util.tree_leaves(out_j),
                              numbax.tree_util.tree_leaves(out_n)))
    tn = timeit(lambda: fn(pn, xn, yn), lambda o: o[0][0].block_until_ready(), 10)
    tj = timeit(lambda: jf(pj, xj, yj), lambda o: o[0][0].block_until_ready(), 10)
    row("MLP step 4096x784-512-512-10 f32", f"numbax {tn * 1e3:.2f} ms",
        f"jax {tj * 1e3:.2f} ms; numbax/jax {tn / tj:.2f}x; max |diff| {err:.1e}")
    bf16 = jnp.bfloat16.dtype  # the same step on bfloat16 parameters and data
    pn, xn, yn = numbax.device_put(jax.tree_util.tree_map(lambda v: v.astype(bf16),
                                                          (params, x, y)), gpu)
    pj, xj, yj = jax.device_put(jax.tree_util.tree_map(lambda v: v.astype(bf16), (params, x, y)))
    fn(pn, xn, yn), jf(pj, xj, yj)
    tn = timeit(lambda: fn(pn, xn, yn), lambda o: o[0][0].block_until_ready(), 10)
    tj = timeit(lambda: jf(pj, xj, yj), lambda o: o[0][0].block_until_ready(), 10)
    row("MLP step 4096x784-512-512-10 bf16", f"numbax {tn * 1e3:.2f} ms",
        f"jax {tj * 1e3:.2f} ms; numbax/jax {tn / tj:.2f}x")
    _mlp_forward(numbax, jnp, jax, xnp, gpu, params, x)


def _mlp_forward(numbax, jnp, jax, xnp, gpu, params, x) -> None:
    """Inference of the same MLP (ReLU and tanh layers): products with bias/ReLU epilogues."""
    acts = {"relu": lambda np_, z: np_.maximum(z, 0.0), "tanh": lambda np_, z: np_.tanh(z)}
    pn, xn = numbax.device_put((params, x), gpu)
    pj, xj = jax.device_put((params, x))
    for name, act in acts.items():
        def make(np_, act=act):
            def predict(params, x):
                for w, b in params[:-1]:
                    x = act(np_, x @ w + b)
                w, b = params[-1]
                return x @ w + b
            return predict
        fn, jf = numbax.jit(make(jnp), backend="gpu"), jax.jit(make(xnp))
        err = float(np.abs(np.asarray(fn(pn, xn)) - np.asarray(jf(pj, xj))).max())
        tn = timeit(lambda: fn(pn, xn), nb_sync, 20)
        tj = timeit(lambda: jf(pj, xj), jx_sync, 20)
        row(f"MLP forward 4096x784-512-512-10 f32 {name}", f"numbax {tn * 1e6:.1f} us",
            f"jax {tj * 1e6:.1f} us; numbax/jax {tn / tj:.2f}x; max |diff| {err:.1e}")


def extra_section() -> None:
    """random.normal on 1e8 (vs jax.random.normal), a scan loop, CuPy zero-copy both ways."""
    import cupy as cp
    import jax

    import numbax
    import numbax.numpy as jnp
    from numbax import lax, random

    gpu = numbax.devices("gpu")[0]
    n = 10**8
    key = random.PRNGKey(0)

    @guarded("random.normal 1e8 f32")
    def _():
        if not want("normal"):
            return
        numbax.config.update("jax_enable_x64", False)
        try:
            f = numbax.jit(lambda k: random.normal(k, (n,), jnp.float32), backend="gpu")
            out = f(key)
            head = np.asarray(out)[:1000]
            cpu = np.asarray(random.normal(key, (1000,), jnp.float32))  # first values: n differs
            full_cpu = np.asarray(numbax.jit(lambda k: random.normal(k, (n,), jnp.float32),
                                             backend="cpu")(key))[:1000]
            kd = numbax.device_put(key, gpu)  # on the card, as JAX's key is
            t = timeit(lambda: f(kd), nb_sync, 5)
            t_host = timeit(lambda: f(key), nb_sync, 5)  # copied over every call
            jk = jax.random.PRNGKey(0)
            jf = jax.jit(lambda k: jax.random.normal(k, (n,), np.float32))
            tj = timeit(lambda: jf(jk), jx_sync, 5)
            err = float(np.max(np.abs(head - full_cpu)))
            row("random.normal 1e8 f32 (write only)", f"numbax {4 * n / t / 1e9:.0f} GB/s",
                f"jax {4 * n / tj / 1e9:.0f} GB/s; numbax/jax {tj / t:.2f}x; first 1000 vs CPU "
                f"numbax jit: max |diff| {err:.1e}, bits-equal {bool(err == 0)}; "
                f"key on the host: numbax {4 * n / t_host / 1e9:.0f} GB/s; "
                f"(n=1000 draws differ from n=1e8 ones: {not np.array_equal(cpu, head)})")
        finally:
            numbax.config.update("jax_enable_x64", True)

    @guarded("scan loop")
    def _():
        if not want("scan"):
            return
        def loop(c, xs):
            return lax.scan(lambda c, x: (jnp.tanh(c * 0.9 + x), c.sum()), c, xs)

        xs = numbax.device_put(np.random.default_rng(0).normal(size=(100, 10**6))
                               .astype(np.float32), gpu)
        c0 = numbax.device_put(np.zeros(10**6, np.float32), gpu)
        f = numbax.jit(loop, backend="gpu")
        t = timeit(lambda: f(c0, xs), lambda o: o[0].block_until_ready(), 5)
        jf = jax.jit(lambda c, xs: jax.lax.scan(
            lambda c, x: (jax.numpy.tanh(c * 0.9 + x), c.sum()), c, xs))
        jx, jc = jax.device_put(np.asarray(xs)), jax.device_put(np.asarray(c0))
        tj = timeit(lambda: jf(jc, jx), lambda o: o[0].block_until_ready(), 5)
        got = np.asarray(f(c0, xs)[0])
        err = float(np.max(np.abs(got - np.asarray(jf(jc, jx)[0]))))
        row("scan 100 steps x 1e6 f32 (tanh + sum)", f"numbax {t * 1e3:.1f} ms "
            f"({t / 100 * 1e6:.0f} us/step)", f"jax {tj * 1e3:.1f} ms; max |diff| {err:.1e}")

    @guarded("cupy zero-copy")
    def _():
        if not want("cupy"):
            return
        c = cp.arange(10, dtype=cp.float32)
        d = numbax.device_put(c, gpu)  # in: a view of CuPy's memory
        same_in = d._dbuf.device_ctypes_pointer.value == c.data.ptr
        y = numbax.jit(lambda a: a * 2, backend="gpu")(d)
        back = cp.asarray(y)  # out: CuPy reads numbax's buffer
        same_out = back.data.ptr == y.__cuda_array_interface__["data"][0]
        ok = np.array_equal(cp.asnumpy(back), np.arange(10, dtype=np.float32) * 2)
        row("__cuda_array_interface__ with cupy", "ok" if ok and same_in and same_out
            else "FAIL", f"in zero-copy {same_in}, out zero-copy {same_out}, values {ok}")


def _version(mod: str) -> str:
    try:
        from importlib.metadata import version

        return version(mod.replace("_", "-"))
    except Exception:  # noqa: BLE001
        return "?"


CPU_CHILD = """
import time, numpy as np, numbax, numbax.numpy as jnp
f = numbax.jit(lambda x: 1.0507 * jnp.where(x > 0, x, 1.67326 * (jnp.exp(x) - 1)))
x = np.random.default_rng(0).normal(size=10**8).astype(np.float32)
f(x)
ts = []
for _ in range(3):
    t = time.perf_counter(); f(x); ts.append(time.perf_counter() - t)
print(min(ts))
"""


def cpu_section() -> None:
    for threads in (1, 4, 16):
        env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), NUMBAX_PLATFORMS="cpu")
        out = subprocess.run([sys.executable, "-c", CPU_CHILD], env=env, capture_output=True,
                             text=True, timeout=300)
        if out.returncode:
            row(f"CPU selu 1e8 f32, {threads} threads", "FAIL", out.stderr[-300:])
            continue
        t = float(out.stdout.split()[-1])
        row(f"CPU selu 1e8 f32, {threads} threads", f"{t * 1e3:.0f} ms",
            f"{8e8 / t / 1e9:.1f} GB/s")


def main() -> None:
    global ONLY
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="first run sim_checks.py's checks on the real GPU")
    parser.add_argument("--cpu", action="store_true",
                        help="add CPU selu rows at NUMBA_NUM_THREADS=1,4,16")
    parser.add_argument("--cpu-only", action="store_true", help="only the CPU selu rows")
    parser.add_argument("--extra-only", action="store_true",
                        help="only the checks (with --check), random.normal, scan and CuPy rows")
    parser.add_argument("--only", metavar="NAME,NAME", help="only these blocks")
    parser.add_argument("--plain-launch", action="store_true",
                        help="launch through numba-cuda's ordinary dispatch")
    args = parser.parse_args()
    ONLY = set(args.only.split(",")) if args.only is not None else None
    print("| what | result | notes |\n|---|---|---|")
    if args.plain_launch:
        from numbax._src.compiler.cuda.runtime import launch as cuda_launch

        cuda_launch.FAST = False
    if args.extra_only:
        if args.check:
            _checks()
        extra_section()
    elif not args.cpu_only:
        gpu_section(args.check)
        extra_section()
    if args.cpu or args.cpu_only:
        cpu_section()
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "bench_cuda.json"), "w") as f:
            json.dump(ROWS, f, indent=1)


if __name__ == "__main__":
    main()
