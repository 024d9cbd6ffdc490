"""Variants of the wide-row softmax kernel (16384, 4096) f32, timed against jax.jit on one card.

Each variant is the row kernel numbax generates, rewritten as text (unsigned indexes, float32
sum, reciprocal division, fast exp, ...), written to a module file, compiled, run on the same
input and checked against numpy. Prints ms, regs/thread, numbax/jax time and max rel error.

    PYTHONPATH=. python3 benchmarks/gpu_softmax_probe.py [--src]

`--src` also prints the last variant's kernel source.
"""
# ruff: noqa: B023  (closures run inside their loop iteration)
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from bench_cuda import timeit  # noqa: E402

import numbax  # noqa: E402
import numbax.numpy as bnp  # noqa: E402
from numbax._src.compiler import fusion, ir, pipeline, registry  # noqa: E402
from numbax._src.compiler.cuda import driver  # noqa: E402
from numbax._src.compiler.cuda.config import Config  # noqa: E402

SHAPE = (16384, 4096)


def softmax(x):
    e = bnp.exp(x - bnp.max(x, axis=1, keepdims=True))
    return e / bnp.sum(e, axis=1, keepdims=True)


def generated(block_max: int = 256, slots: int = 16) -> tuple[str, str]:
    cfg = Config(False)
    cfg.row_block_max, cfg.row_slots = block_max, slots
    closed = numbax.make_jaxpr(softmax)(np.zeros(SHAPE, np.float32))
    jaxpr = pipeline.prepare(closed.jaxpr)
    (nest,) = [n for n in fusion.partition(jaxpr, lambda e: registry.fusible(e, "cuda"))
               if isinstance(n, ir.LoopNest)]
    kernel = driver.render_nest(nest, cfg)
    step = kernel.launches[0]
    return kernel.source, f"{step.function}[{step.blocks}, {step.threads}]"


def uidx(src: str) -> str:
    src = re.sub(r"fb = r \* (\d+)", r"fb = np.uint64(r) * np.uint64(\1)", src)
    return re.sub(r"(f\d+) = fb \+ (tid[^\n]*)", r"\1 = fb + np.uint64(\2)", src)


def f32acc(src: str) -> str:
    return (src.replace("acc1 = np.float64(0.0)", "acc1 = np.float32(0.0)")
            .replace("sm1 = cuda.shared.array(8, np.float64)",
                     "sm1 = cuda.shared.array(8, np.float32)")
            .replace("sm1 = cuda.shared.array(16, np.float64)",
                     "sm1 = cuda.shared.array(16, np.float32)"))


_INV = "r1 = np.float32(acc1)\n        inv = np.float32(1.0) / r1"


def recip(src: str) -> str:
    src = src.replace("r1 = np.float32(acc1)", _INV)
    return re.sub(r"np\.float32\(\((t\d+) / t\d+\)\)", r"(\1 * inv)", src)


def markstein(src: str) -> str:
    src = src.replace("r1 = np.float32(acc1)", _INV)
    return re.sub(r"(t\d+) = np\.float32\(\((t\d+) / t\d+\)\)",
                  r"\1 = \2 * inv\n        \1 = cuda.fma(cuda.fma(-\1, r1, \2), inv, \1)", src)


def fastdiv(src: str) -> str:
    return re.sub(r"np\.float32\(\((t\d+) / (t\d+)\)\)", r"cd.fdividef(\1, \2)", src)


def fastexp(src: str) -> str:
    return src.replace("math.exp(", "libdevice.fast_expf(").replace(
        "import math  # noqa: F401", "import math  # noqa: F401\nfrom numba.cuda import libdevice")


def load(src: str, tag: str):
    path = os.path.join(tempfile.mkdtemp(), f"probe_{tag}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"probe_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", action="store_true", help="print the last variant's source")
    args = parser.parse_args()
    import jax
    from numba import cuda

    rng = np.random.default_rng(0)
    host = rng.normal(size=SHAPE).astype(np.float32)
    e = np.exp(host.astype(np.float64) - host.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    jm = jax.device_put(host, jax.devices("gpu")[0])
    jf = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))
    tj = timeit(lambda: jf(jm), lambda o: o.block_until_ready(), reps=50)
    jerr = np.max(np.abs(np.asarray(jf(jm)) - ref) / ref)
    print(f"gpu_softmax_probe | {time.strftime('%Y-%m-%d %H:%M')} | "
          f"{cuda.get_current_device().name}")
    print(f"jax.jit {tj * 1e3:.3f} ms, max rel err {jerr:.2e}")
    dm = numbax.device_put(host, numbax.devices("gpu")[0])
    fn = numbax.jit(lambda x: numbax.nn.softmax(x, axis=-1), backend="gpu")
    tn = timeit(lambda: fn(dm), lambda o: o.block_until_ready(), reps=50)
    t0 = time.perf_counter()
    for _ in range(20):
        out = fn(dm)
    t_py = (time.perf_counter() - t0) / 20
    out.block_until_ready()
    print(f"numbax.jit nn.softmax {tn * 1e3:.3f} ms (Python per call, unsynchronised "
          f"{t_py * 1e6:.0f} us)  numbax/jax time {tn / tj:.2f}")
    d_in = cuda.to_device(host.reshape(-1))
    d_out = cuda.device_array(host.size, np.float32)
    variants = []
    for bm, sl in ((256, 16), (512, 8)):
        src, _ = generated(bm, sl)
        threads = bm
        base = [("gen", src), ("uidx", uidx(src)), ("uidx+f32acc", f32acc(uidx(src))),
                ("uidx+recip", recip(uidx(src))), ("uidx+markstein", markstein(uidx(src))),
                ("uidx+fastdiv", fastdiv(uidx(src))), ("uidx+fastexp", fastexp(uidx(src))),
                ("all: uidx+f32acc+markstein+fastexp", fastexp(markstein(f32acc(uidx(src)))))]
        variants += [(f"{threads}x{sl} {name}", s, threads) for name, s in base]
    for tag, (name, src, threads) in enumerate(variants):
        try:
            k = load(src, str(tag))
            launch = k[SHAPE[0], threads]
            launch(d_in, d_out)
            cuda.synchronize()
            t = timeit(lambda: launch(d_in, d_out), lambda o: cuda.synchronize(), reps=50)
            got = d_out.copy_to_host().reshape(SHAPE)
            err = np.max(np.abs(got - ref) / ref)
            try:
                regs = k.get_regs_per_thread()
            except Exception as exc:  # noqa: BLE001
                regs = f"? ({type(exc).__name__})"
            print(f"{name:<44} {t * 1e3:7.3f} ms  regs {regs}  numbax/jax time {t / tj:5.2f}  "
                  f"max rel err {err:.2e}", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(f"{name:<44} FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
    tj = timeit(lambda: jf(jm), lambda o: o.block_until_ready(), reps=50)
    tn = timeit(lambda: fn(dm), lambda o: o.block_until_ready(), reps=50)
    print(f"again: jax.jit {tj * 1e3:.3f} ms, numbax.jit {tn * 1e3:.3f} ms, numbax/jax time "
          f"{tn / tj:.2f}")
    if args.src:
        print(variants[-1][1])


if __name__ == "__main__":
    main()
