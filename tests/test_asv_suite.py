"""The asv suite (asv_bench/benchmarks) runs: every benchmark's setup + timed method once at its
smallest parameters, and the numbax variants compute what the numpy variants compute."""
import importlib
import inspect
import itertools
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "asv_bench" / "benchmarks"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODULES = sorted(p.stem for p in BENCH_DIR.glob("bench_*.py"))
PREFIXES = ("time_", "track_", "mem_", "peakmem_")


def _module(name):
    return importlib.import_module(f"asv_bench.benchmarks.{name}")


def _benchmarks():
    found = []
    for mod_name in MODULES:
        for cls_name, cls in inspect.getmembers(_module(mod_name), inspect.isclass):
            if cls.__module__ != f"asv_bench.benchmarks.{mod_name}":
                continue
            for meth in sorted(m for m in dir(cls) if m.startswith(PREFIXES)):
                found.append(pytest.param(cls, meth, id=f"{mod_name}.{cls_name}.{meth}"))
    return found


def _param_lists(cls):
    params = getattr(cls, "params", ())
    if params and not isinstance(params[0], (list, tuple)):
        params = (params,)
    return [list(p) for p in params]


def _smallest(cls):
    return tuple(p[0] for p in _param_lists(cls))


def test_every_module_imports_and_defines_benchmarks():
    assert {"bench_compile", "bench_control_flow", "bench_dispatch", "bench_elementwise",
            "bench_matmul", "bench_pmap", "bench_reductions", "bench_training"} <= set(MODULES)
    names = {p.id.rsplit(".", 1)[0] for p in _benchmarks()}
    for expected in ("bench_training.MLPTrainStep", "bench_training.PerExampleGrads",
                     "bench_control_flow.ScanRNN", "bench_control_flow.NewtonWhileLoop",
                     "bench_dispatch.Dispatch", "bench_compile.CompileTime",
                     "bench_pmap.PmapScaling"):
        assert expected in names


@pytest.mark.parametrize("cls, method", _benchmarks())
def test_benchmark_runs_once(cls, method):
    if cls.__name__ == "CompileTime":  # one function, numbax only: two subprocesses, not eight
        cls = type("CompileTimeSmall", (cls,), {"params": (["numbax"], ["selu"])})
    params = _smallest(cls)
    obj = cls()
    cache = (obj.setup_cache(),) if hasattr(obj, "setup_cache") else ()
    args = (*cache, *params)
    if hasattr(obj, "setup"):
        try:
            obj.setup(*args)
        except NotImplementedError as e:
            pytest.skip(f"asv would skip: {e}")
    try:
        result = getattr(obj, method)(*args)
    finally:
        if hasattr(obj, "teardown"):
            obj.teardown(*args)
    if method.startswith("track_"):
        unit = getattr(cls, "unit", None)
        assert unit in ("seconds", "MiB")
        assert isinstance(result, float) and (0 < result < 600 if unit == "seconds" else
                                              0 <= result < 600)


def _with_numpy_variant():
    out = []
    for p in _benchmarks():
        cls, _ = p.values
        names = getattr(cls, "param_names", [])
        if names[:1] == ["impl"] and "numpy" in _param_lists(cls)[0] and cls not in out:
            out.append(cls)
    return [pytest.param(c, id=c.__name__) for c in out]


@pytest.mark.parametrize("cls", _with_numpy_variant())
def test_numbax_variant_matches_numpy_variant(cls):
    rest = list(itertools.product(*_param_lists(cls)[1:]))[0]
    outs = {}
    for impl in ("numbax", "numpy"):
        obj = cls()
        obj.setup(impl, *rest)
        outs[impl] = np.asarray(obj.fn(*obj.args))
    rtol = 1e-4 if outs["numpy"].dtype == np.float32 else 1e-9
    np.testing.assert_allclose(outs["numbax"], outs["numpy"], rtol=rtol, atol=rtol)


def test_per_example_logreg_grads_match_closed_form():
    from asv_bench.benchmarks.bench_training import PerExampleGrads

    obj = PerExampleGrads()
    obj.setup("numbax", "logreg_569x30", "float64")
    (w, b), x, y = obj.args
    gw, gb = obj.fn(*obj.args)
    resid = 1 / (1 + np.exp(-(x @ w + b))) - y  # d/dz [log(1 + e^z) - y z]
    np.testing.assert_allclose(np.asarray(gw), resid[:, None] * x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(gb), resid, rtol=1e-10, atol=1e-12)


def test_mlp_train_step_matches_finite_differences():
    """One SGD step: params - lr * grad, grad checked on a few weights by central differences."""
    from asv_bench.benchmarks import models
    from asv_bench.benchmarks.bench_training import make_train_step

    params = models.init_mlp([6, 5, 3], "float64")
    x, y = models.classification_data(4, 6, 3, "float64")
    lr = 0.5
    new = make_train_step("numbax", lr=lr)(params, x, y)

    def loss(p):
        return models.cross_entropy(np, models.mlp_logits(np, p, x), y)

    eps = 1e-6
    for layer, idx in ((0, (1, 2)), (1, (4, 0)), (1, (0, 2))):
        plus = [(w.copy(), b) for w, b in params]
        minus = [(w.copy(), b) for w, b in params]
        plus[layer][0][idx] += eps
        minus[layer][0][idx] -= eps
        fd = (loss(plus) - loss(minus)) / (2 * eps)
        step = (params[layer][0][idx] - float(np.asarray(new[layer][0])[idx])) / lr
        np.testing.assert_allclose(step, fd, rtol=1e-6, atol=1e-9)


def test_require_rejects_unknown_impl():
    from asv_bench.benchmarks.common import require

    with pytest.raises(NotImplementedError, match="no cupy variant"):
        require("cupy")
    with pytest.raises(NotImplementedError, match="no numpy variant"):
        require("numpy", ("numbax", "jax"))


def test_sizes_full_only_with_env(monkeypatch):
    from asv_bench.benchmarks import common

    monkeypatch.setattr(common, "FULL", False)
    assert common.sizes([10], [100]) == [10]
    monkeypatch.setattr(common, "FULL", True)
    assert common.sizes([10], [100]) == [10, 100]


def test_jax_variants_are_left_out_when_jax_is_absent(monkeypatch):
    """Without JAX no jax parameter exists, so asv prints no skipped notice per parameter."""
    common = _module("common")
    monkeypatch.setattr(common, "jax", None)
    assert common.impls("numbax", "numpy", "jax") == ["numbax", "numpy"]
    monkeypatch.setattr(common, "jax", object())
    assert common.impls("numbax", "jax") == ["numbax", "jax"]
