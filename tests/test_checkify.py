"""jax.experimental.checkify: error messages of user, NaN, index and division checks, under jit,
vmap, grad and control flow, compared with JAX's recorded ones
(tests/data/checkify_jax_reference.json); bad input."""
from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.experimental import checkify
from tests.data.checkify_programs import PROGRAMS
from tests.data.reference_tree import assert_matches

REFERENCE = json.loads(
    (pathlib.Path(__file__).parent / "data" / "checkify_jax_reference.json").read_text())
MODULES = SimpleNamespace(jax=numbax, jnp=jnp, checkify=checkify)



@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_jax(name):
    assert_matches(PROGRAMS[name](MODULES), REFERENCE[name], name, rtol=1e-13)


def test_checkified_function_is_jittable_and_returns_values():
    def f(x):
        checkify.check(jnp.all(x > 0), "nonpositive entry in {}", x)
        return jnp.sum(jnp.log(x))

    cf = numbax.jit(checkify.checkify(f))
    x = np.array([1.0, 2.0, 4.0])
    err, out = cf(x)
    assert err.get() is None and float(out) == pytest.approx(np.log(8.0), rel=1e-15)
    err, _ = cf(-x)
    assert err.get() == f"nonpositive entry in {np.asarray(-x)} (`check` failed)"
    with pytest.raises(checkify.JaxRuntimeError, match="nonpositive entry"):
        err.throw()
    assert issubclass(checkify.JaxRuntimeError, ValueError)


def test_check_in_plain_jit_raises_at_run_time():
    f = numbax.jit(lambda x: (checkify.check(x > 0, "x={}", x), x * 2)[1])
    assert float(f(3.0)) == 6.0
    with pytest.raises(checkify.JaxRuntimeError, match=r"x=-1.0 \(`check` failed\)"):
        f(-1.0)
    g = numbax.vmap(lambda x: (checkify.check(x > 0, "x={}", x), x)[1])
    with pytest.raises(checkify.JaxRuntimeError, match=r"x=-2.0"):
        g(jnp.array([1.0, -2.0, -3.0]))


def test_error_is_a_pytree_and_categories_compose():
    err, _ = checkify.checkify(lambda x: x / x, errors=checkify.all_checks)(jnp.asarray(0.0))
    leaves, tree = numbax.tree_util.tree_flatten(err)
    again = numbax.tree_util.tree_unflatten(tree, leaves)
    assert again.get() == err.get() == "division by zero"
    assert checkify.all_checks == (checkify.user_checks | checkify.nan_checks
                                   | checkify.index_checks | checkify.div_checks)
    assert checkify.float_checks == {checkify.NaNError, checkify.DivisionByZeroError}
    assert isinstance(err.get_exception(), checkify.DivisionByZeroError)


def test_bad_input():
    with pytest.raises(TypeError, match="scalar pred"):
        checkify.check(jnp.array([True, False]), "array")
    with pytest.raises(TypeError, match="scalar pred"):
        checkify.check(jnp.asarray(1.0), "float")
    with pytest.raises(TypeError, match="PyTrees of arrays"):
        checkify.check(jnp.asarray(True), "{}", "text")
    with pytest.raises(TypeError, match="msg is a int"):
        checkify.check(jnp.asarray(True), 3)
    with pytest.raises(TypeError, match="does not match the formatting arguments"):
        checkify.check(jnp.asarray(True), "{a}", jnp.asarray(1.0))
    with pytest.raises(TypeError, match="f is a int"):
        checkify.checkify(3)
    with pytest.raises(TypeError, match="errors holds"):
        checkify.checkify(jnp.sin, errors={ValueError})
    with pytest.raises(TypeError, match="error is a str"):
        checkify.check_error("error")
    with pytest.raises(numbax.errors.TracerBoolConversionError):
        checkify.checkify(lambda x: x if x > 0 else -x)(jnp.asarray(1.0))
