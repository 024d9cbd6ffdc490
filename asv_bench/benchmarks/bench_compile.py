"""Compile cost as `track_` metrics: the first call of a jitted function (trace, lower,
compile, run) in a fresh Python process, cold (an empty NUMBAX_CACHE_DIR) and cached (a second
process with the same cache directory, so Numba loads the kernels from disk); issue 20's long
chains and its 300-shape sweep (time, and memory kept per shape) through the children of
benchmarks/bench_compile.py."""
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

from .common import impls, jax, require, sizes

FUNCTIONS = ["selu", "mlp_train_step"]

_SCRIPT = r"""
import json, sys, time
sys.path.insert(0, {models_dir!r})
import numpy as np
{imports}
import models

name = {name!r}
if name == "selu":
    fn = jit(lambda x: 1.05 * m.where(x > 0, x, 1.67 * m.exp(x) - 1.67))
    args = (np.linspace(-1.0, 1.0, 1000),)
else:
    def loss(p, x, y):
        return models.cross_entropy(m, models.mlp_logits(m, p, x), y)

    def step(p, x, y):
        g = grad(loss)(p, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(p, g)]

    fn = jit(step)
    args = (models.init_mlp([784, 512, 512, 10], "float32"),
            *models.classification_data(128, 784, 10, "float32"))
start = time.perf_counter()
out = fn(*args)
block(out)
print(json.dumps({{"seconds": time.perf_counter() - start}}))
"""

_IMPORTS = {
    "numbax": "import numbax\nimport numbax.numpy as m\njit, grad = numbax.jit, numbax.grad\n"
              "block = numbax.block_until_ready",
    "jax": "import jax\nimport jax.numpy as m\njit, grad = jax.jit, jax.grad\n"
           "block = jax.block_until_ready",
}


def first_call_seconds(impl, name, cache_dir):
    """Seconds of the first call of `name` in a new interpreter using `cache_dir`."""
    script = _SCRIPT.format(models_dir=os.path.dirname(os.path.abspath(__file__)), name=name,
                            imports=_IMPORTS[impl])
    env = dict(os.environ, NUMBAX_CACHE_DIR=cache_dir, NUMBAX_COMPILATION_CACHE="1")
    if impl == "jax":  # JAX's persistent cache, off unless asked for: keep both runs cold
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"compile-time subprocess failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


class CompileTime:
    params = (impls("numbax", "jax"), FUNCTIONS)
    param_names = ["impl", "function"]
    timeout = 600
    unit = "seconds"

    def setup_cache(self):
        """Both measurements for every parameter, once (two subprocesses per parameter)."""
        results = {}
        for impl, name in itertools.product(*self.params):
            if impl == "jax" and jax is None:
                continue
            cache_dir = tempfile.mkdtemp(prefix="numbax-asv-cache-")
            try:
                cold = first_call_seconds(impl, name, cache_dir)
                cached = first_call_seconds(impl, name, cache_dir)
            finally:
                shutil.rmtree(cache_dir, ignore_errors=True)
            results[impl, name] = {"cold": cold, "cached": cached}
        return results

    def setup(self, results, impl, name):
        if (impl, name) not in results:
            raise NotImplementedError(f"{impl} is not installed")

    def track_cold_compile(self, results, impl, name):
        return results[impl, name]["cold"]

    def track_cached_compile(self, results, impl, name):
        return results[impl, name]["cached"]


_BENCH_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                             "benchmarks", "bench_compile.py")


def _child(*args):
    """One measurement of benchmarks/bench_compile.py in a fresh process, empty caches."""
    cache_dir = tempfile.mkdtemp(prefix="numbax-asv-cache-")
    env = dict(os.environ, NUMBAX_CACHE_DIR=cache_dir)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    try:
        proc = subprocess.run([sys.executable, _BENCH_SCRIPT, "--child", *map(str, args)],
                              env=env, capture_output=True, text=True, timeout=900)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_compile child {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class ChainCompile:
    """Issue 20's long programs: the first call (trace, compile, run) of an elementwise chain
    and of a chain with a full reduction every other step (models.py), in a fresh process."""

    params = (impls("numbax", "jax"), ["elementwise", "mixed"], sizes([128], [1000, 5000]))
    param_names = ["impl", "chain", "ops"]
    timeout = 900
    unit = "seconds"

    def setup(self, impl, chain, ops):
        require(impl, ("numbax", "jax"))
        self.result = _child("chain", impl, chain, ops)

    def track_first_call(self, impl, chain, ops):
        return self.result["wall"]


class _Sweep:
    """One function called with `count` shapes (models.shape_sweep_fn, x of (n, 32)), in a
    fresh process."""

    params = (impls("numbax", "jax"), sizes([30], [300]))
    param_names = ["impl", "count"]
    timeout = 900

    def setup(self, impl, count):
        require(impl, ("numbax", "jax"))
        self.result = _child("shapes", impl, count)


class ShapeSweep(_Sweep):
    """The total time of the sweep's first calls."""

    unit = "seconds"

    def track_total(self, impl, count):
        return self.result["total"]


class ShapeSweepMemory(_Sweep):
    """The memory the sweep keeps per extra shape (RSS growth from the 10th shape on)."""

    unit = "MiB"

    def track_kept_per_shape(self, impl, count):
        return self.result["mib_per_shape"]
