"""Per-call latency (p50/p99) of jitted selu 1e6, sum 1e7 and a small tanh, quiet and with
N busy-looping processes (argv[1], default 2) on the same machine."""
import subprocess
import sys
import time

import numpy as np

import numbax
import numbax.numpy as jnp


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
f = numbax.jit(selu)
x = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
s = numbax.jit(jnp.sum)
big = np.random.default_rng(0).standard_normal(10_000_000).astype(np.float32)
small = np.ones(20000, np.float32)
g = numbax.jit(lambda v: jnp.tanh(v) * 2 + 1)
for _ in range(5): f(x); s(big); g(small)
def times(fn, a, n):
    out = []
    for _ in range(n):
        t = time.perf_counter(); fn(a); out.append(time.perf_counter() - t)
    out = np.array(out) * 1e3
    return f"p50 {np.median(out):.3f} ms p99 {np.percentile(out, 99):.3f} max {out.max():.2f}"
def run(tag):
    print(tag, "selu1e6", times(f, x, 300)); print(tag, "sum1e7", times(s, big, 60)); print(tag, "tanh2e4", times(g, small, 2000))
run("quiet")
busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(int(sys.argv[1]) if len(sys.argv)>1 else 2)]
time.sleep(1.5)
try:
    run("busy")
finally:
    for p in busy: p.kill()
