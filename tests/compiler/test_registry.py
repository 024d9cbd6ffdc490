"""The lowering registry (compiler/registry.py): every primitive numbax defines has an entry,
backend fields override neutral ones, bad registrations name what is wrong, and a primitive
with no entry still runs under jit."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import numbax
from numbax._src import core
from numbax._src.compiler import registry
from numbax._src.compiler.registry import Fusion
from numbax._src.lax import elementwise as lax
from tests.lax.test_matrix import COLLECTIVES, _registered


def test_every_primitive_has_a_lowering_entry():
    """A primitive without a registration would run its eager impl under jit with a warning;
    numbax's own are all registered (fused, a library rule, or deliberately eager)."""
    missing = sorted(n for n, p in _registered().items() if not registry.is_registered(p))
    assert not missing, f"primitives without a lowering registration: {missing}"


def test_collectives_and_linalg_are_eager_on_the_cpu():
    from numbax._src.lax import linalg, parallel

    assert {"psum", "all_gather"} <= COLLECTIVES
    for prim in (parallel.psum_p, parallel.all_gather_p, linalg.cholesky_p):
        assert registry.lowering(prim, "cpu").library is registry.EAGER


def test_backend_fields_override_neutral_ones():
    cpu = registry.lowering(lax.exp_p, "cpu")
    cuda = registry.lowering(lax.exp_p, "cuda")
    eqn = numbax.make_jaxpr(lax.exp)(np.float32(1.0)).jaxpr.eqns[0]
    assert cpu.fusion is cuda.fusion is Fusion.ELEMENTWISE
    assert cpu.scalar(["x"], eqn) == "fm.exp_f32(x)"  # the CPU's vectorised fast math
    assert cuda.scalar(["x"], eqn) == "math.exp(x)"  # libdevice on CUDA
    assert cpu.heavy and not cuda.heavy


def test_fusible_reads_the_dtype_limits_off_the_entry():
    def eqn_of(f, *args):
        return numbax.make_jaxpr(f)(*args).jaxpr.eqns[0]

    z = np.ones(3, np.complex128)
    assert registry.fusible(eqn_of(lax.sin, np.ones(3)), "cpu")
    assert not registry.fusible(eqn_of(lax.logistic, z), "cpu")  # no complex scalar form
    assert registry.fusible(eqn_of(lambda a: a * 2.0, z), "cuda")  # CUDA's complex rules
    assert not registry.fusible(eqn_of(lambda a: lax.max(a, a), z), "cuda")
    erfinv16 = eqn_of(lax.erf_inv, np.ones(3, np.float16))
    assert not registry.fusible(erfinv16, "cpu")  # fast math is float32/float64 only


def test_bad_registrations_name_the_problem():
    with pytest.raises(TypeError, match="expected a Primitive"):
        registry.register("exp", Fusion.ELEMENTWISE)
    with pytest.raises(TypeError, match="unknown lowering fields"):
        registry.register(lax.exp_p, scalr=None)
    with pytest.raises(ValueError, match="backend has value 'tpu'"):
        registry.register(lax.exp_p, backend="tpu", heavy=True)


def test_unregistered_primitive_warns_once_and_runs_eagerly():
    prim = core.Primitive("test_registry_cube")
    core.abstract_eval_rules[prim] = lambda a: [a]
    core.impl_rules[prim] = lambda x: [x ** 3]
    f = numbax.jit(lambda x: prim.bind(x) + 1.0)
    with pytest.warns(RuntimeWarning, match="test_registry_cube"):
        np.testing.assert_allclose(f(np.arange(3.0)), np.arange(3.0) ** 3 + 1.0)
    g = numbax.jit(lambda x: prim.bind(x) * 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same primitive again: no second warning
        np.testing.assert_allclose(g(np.arange(3.0)), 2 * np.arange(3.0) ** 3)


def test_registering_a_lowering_makes_it_fuse():
    """The worked example of docs/architecture.md: a new elementwise primitive with one
    registration joins the loop nest of its neighbours (no driver call, no warning)."""
    from numbax._src.compiler.lowerings.elementwise import elementwise
    from numbax._src.compiler.lowerings.forms import call

    prim = core.Primitive("test_registry_hypot1")
    core.abstract_eval_rules[prim] = lambda a: [a]
    core.impl_rules[prim] = lambda x: [np.hypot(x, 1.0)]
    elementwise(prim, lambda args, eqn: f"np.sqrt({args[0]} * {args[0]} + 1.0)",
                call("np.hypot"), cuda=call("math.hypot"))
    f = numbax.jit(lambda x: prim.bind(x * 2.0) - 1.0)
    x = np.linspace(-2, 2, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(f(x), np.hypot(2 * x, 1.0) - 1.0, rtol=1e-15)
    text = f.lower(x).as_text()
    assert text.count("def kernel(") == 1 and "np.sqrt(" in text
