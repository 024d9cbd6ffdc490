"""Dense layers' epilogues on the CPU (compiler/epilogues.py): MLP inference (784-512-512-10,
float32, ReLU or GELU hidden layers) jitted with the bias and activation inside the products
(`cpu_epilogues` on, the default) and without (a separate loop nest per layer), against
jax.jit, all in one process, taking turns. Prints medians in ms (minimum in brackets) and the
ratios of the medians; no asserts.

    PYTHONPATH=. python benchmarks/dense_epilogues.py [--batch 128,2048] [--calls 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numbax  # noqa: E402

try:
    import jax
except ImportError:  # numbax's rows alone
    jax = None

SIZES = (784, 512, 512, 10)


def predict(nn, activation):
    def f(params, x):
        h = x
        for w, b in params[:-1]:
            h = getattr(nn, activation)(h @ w + b)
        w, b = params[-1]
        return h @ w + b
    return f


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", default="128,2048")
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    params = [((rng.normal(size=(a, b)) / np.sqrt(a)).astype(np.float32),
               rng.normal(size=b).astype(np.float32) * 0.1) for a, b in zip(SIZES, SIZES[1:])]
    print(f"dense_epilogues | {time.strftime('%Y-%m-%d %H:%M')} | "
          f"{len(os.sched_getaffinity(0))} cores | jax {jax.__version__ if jax else 'absent'}")
    for batch in map(int, args.batch.split(",")):
        x = rng.normal(size=(batch, SIZES[0])).astype(np.float32)
        for activation in ("relu", "gelu"):
            f = predict(numbax.nn, activation)
            forms = {"fused": (numbax.jit(f), True),
                     "unfused": (numbax.jit(lambda p, v, f=f: f(p, v)), False)}
            runs = {}
            for name, (fn, on) in forms.items():
                with numbax.config.override("cpu_epilogues", on):  # read when it compiles
                    fn(params, x)
                runs[name] = lambda fn=fn, x=x: np.asarray(fn(params, x))
            if jax is not None:
                jf = jax.jit(predict(jax.nn, activation))
                jp, jx = jax.device_put(params), jax.device_put(x)
                runs["jax"] = lambda jf=jf, jp=jp, jx=jx: jf(jp, jx).block_until_ready()
            ref = runs["unfused"]()
            np.testing.assert_allclose(runs["fused"](), ref, rtol=1e-4, atol=1e-4)
            times: dict = {k: [] for k in runs}
            for _ in range(3):
                for fn in runs.values():
                    fn()
            order = list(runs.items())
            for k in range(args.calls):
                # turns at going first: a form right after jax.jit meets its spinning threads
                for name, fn in order[k % len(order):] + order[:k % len(order)]:
                    start = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - start)
            med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            line = " ".join(f"{k} {v:7.3f} ({min(times[k]) * 1e3:.2f})" for k, v in med.items())
            ratio = f" fused/unfused {med['fused'] / med['unfused']:.2f}"
            if "jax" in med:
                ratio += f" fused/jax {med['fused'] / med['jax']:.2f} " \
                         f"unfused/jax {med['unfused'] / med['jax']:.2f}"
            print(f"batch {batch:5d} {activation}: {line} ms |{ratio}", flush=True)


if __name__ == "__main__":
    main()
