"""numbax.custom_derivatives beyond custom_jvp/custom_vjp: custom_gradient, closure_convert,
linear_call, symbolic zeros and optimize_remat, compared with JAX's recorded outputs
(tests/data/custom_derivatives_jax_reference.json), plus what JAX cannot do (vmap of
linear_call) against a loop, and bad input."""
from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import custom_derivatives as cd
from numbax._src import core
from tests.data.custom_derivative_programs import PROGRAMS
from tests.data.reference_tree import assert_matches

REFERENCE = json.loads((pathlib.Path(__file__).parent / "data" /
                        "custom_derivatives_jax_reference.json").read_text())
MODULES = SimpleNamespace(jax=numbax, jnp=jnp, cd=cd)



@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_jax(name):
    assert_matches(PROGRAMS[name](MODULES), REFERENCE[name], name, rtol=1e-11)


def test_linear_call_under_vmap_matches_a_loop():
    def div_add(x, denom):
        return x + cd.linear_call(lambda r, x: x / r, lambda r, ct: ct / r, denom, x)

    xs = np.arange(1.0, 4.0)
    want = REFERENCE["linear_call"]
    np.testing.assert_allclose(numbax.vmap(div_add)(xs, xs + 1), want[7], rtol=1e-15)
    np.testing.assert_allclose(numbax.vmap(numbax.grad(div_add))(xs, xs + 1), want[8],
                               rtol=1e-15)
    np.testing.assert_allclose(numbax.jit(numbax.vmap(numbax.grad(div_add)))(xs, xs + 1),
                               want[8], rtol=1e-15)


def test_optimize_remat_runs_the_primal_in_the_forward_pass():
    """An opaque fwd (a host callback computing the value and its residual together) runs
    twice under checkpoint (forward, then recomputed backward) unless optimize_remat lets
    the forward pass run the primal function instead (with transparent equations, DCE does
    the same by itself, as JAX notes)."""
    calls = []

    def sin_and_cos(x):
        calls.append(float(x))
        return np.sin(x), np.cos(x)

    spec = numbax.ShapeDtypeStruct((), np.float64)

    def make(optimize):
        @numbax.custom_vjp
        def h(x):
            return jnp.sin(x)

        h.defvjp(lambda x: numbax.pure_callback(sin_and_cos, (spec, spec), x),
                 lambda c, g: (c * g,), optimize_remat=optimize)
        return numbax.checkpoint(h)

    for optimize, fwd_calls in ((False, 1), (True, 0)):
        calls.clear()
        out, f_vjp = numbax.vjp(make(optimize), 0.4)
        assert len(calls) == fwd_calls and float(out) == pytest.approx(np.sin(0.4), rel=1e-15)
        (g,) = f_vjp(1.0)
        assert len(calls) == fwd_calls + 1 and float(g) == pytest.approx(np.cos(0.4), rel=1e-15)


def test_symbolic_zero_behaves_like_its_aval():
    z = cd.SymbolicZero(core.ShapedArray((2, 3), np.dtype(np.float32)))
    assert (z.shape, z.dtype, z.ndim, repr(z)) == ((2, 3), np.float32, 2, "SymbolicZero")
    with pytest.raises(AttributeError, match="SymbolicZero has no attribute nope"):
        z.nope  # noqa: B018
    with pytest.raises(TypeError, match="unexpected leaf type"):
        cd.custom_vjp_primal_tree_values((1.0,))


def test_bad_input():
    with pytest.raises(TypeError, match="fun is a int"):
        cd.custom_gradient(3)
    with pytest.raises(TypeError, match="must return a pair"):
        numbax.grad(cd.custom_gradient(lambda x: x))(1.0)
    with pytest.raises(TypeError, match="fun is a str"):
        cd.closure_convert("f", 1.0)
    with pytest.raises(TypeError, match="example argument leaf 0 is a str"):
        cd.closure_convert(lambda x: x, "a")
    f, _ = cd.closure_convert(lambda x, y: x * y, 1.0, 2.0)
    with pytest.raises(TypeError, match="same Pytree structure"):
        f((1.0, 2.0))
    with pytest.raises(TypeError, match="fun_transpose is a int"):
        cd.linear_call(lambda r, x: x, 3, (), 1.0)
    bad = lambda x: cd.linear_call(lambda r, x: x, lambda r, t: (t, t), (), x)  # noqa: E731
    with pytest.raises(TypeError, match="transpose output pytree structure"):
        numbax.grad(bad)(1.0)
    with pytest.raises(NotImplementedError, match="does not support symbolic zeros"):
        numbax.custom_vjp(jnp.sin).defvjp(lambda x: (x, x), lambda r, g: (g,),
                                          symbolic_zeros=True, optimize_remat=True)
