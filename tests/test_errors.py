"""numbax.errors: JAX's classes with JAX's hierarchy (recorded from JAX), raised where JAX raises
them, so `except jax.errors.X` and `except TypeError` catch the same things under numbax."""
import json
import operator
import pathlib

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import errors, lax
from numbax._src import core, typecheck

REF = json.loads((pathlib.Path(__file__).parent / "data" /
                  "errors_jax_reference.json").read_text())


def _names(cls: type) -> set[str]:
    return {c.__name__ for c in cls.__mro__}


@pytest.mark.parametrize("name", sorted(REF["bases"]))
def test_class_hierarchy_matches_jax(name):
    cls = getattr(errors, name)
    assert set(REF["bases"][name]) <= _names(cls)
    own = {c.__name__ for c in cls.__mro__[1:] if hasattr(errors, c.__name__)}
    assert own == {b for b in REF["bases"][name] if b in REF["bases"]}


CASES = {
    "bool_of_tracer": lambda: numbax.jit(lambda x: 1 if x > 0 else 2)(1.0),
    "int_of_tracer": lambda: numbax.jit(lambda x: int(x))(1.0),
    "float_of_tracer": lambda: numbax.jit(lambda x: float(x))(1.0),
    "index_of_tracer": lambda: numbax.jit(lambda x: operator.index(x))(1),
    "asarray_of_tracer": lambda: numbax.jit(lambda x: np.asarray(x))(1.0),
    "boolean_mask_traced": lambda: numbax.jit(lambda x: x[x > 0])(jnp.ones(3)),
    "jnp_add_shapes": lambda: jnp.add(jnp.ones(3), jnp.ones(4)),
    "jnp_dot_shapes": lambda: jnp.dot(jnp.ones(3), jnp.ones(4)),
    "jnp_matmul_shapes": lambda: jnp.matmul(jnp.ones((2, 3)), jnp.ones((4, 2))),
    "jnp_concatenate_shapes": lambda: jnp.concatenate([jnp.ones((2, 3)), jnp.ones((2, 4))]),
    "jnp_reshape_size": lambda: jnp.reshape(jnp.ones(6), (4,)),
    "jnp_stack_shapes": lambda: jnp.stack([jnp.ones(3), jnp.ones(4)]),
    "jnp_broadcast_to": lambda: jnp.broadcast_to(jnp.ones(3), (4,)),
    "lax_add_shapes": lambda: lax.add(jnp.ones(3), jnp.ones(4)),
    "lax_add_dtypes": lambda: lax.add(jnp.ones(3), jnp.ones(3, jnp.int32)),
    "lax_dot_general_sizes": lambda: lax.dot_general(jnp.ones(3), jnp.ones(4),
                                                     (((0,), (0,)), ((), ()))),
    "lax_reshape_size": lambda: lax.reshape(jnp.ones(3), (4,)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_raises_what_jax_raises(case):
    with pytest.raises(Exception) as info:
        CASES[case]()
    assert set(REF["raised"][case]) <= _names(type(info.value)), str(info.value)


@pytest.mark.parametrize("case", [c for c in sorted(CASES) if c.startswith(("jnp", "lax"))])
def test_shape_and_dtype_mismatches_are_type_and_value_errors(case):
    with pytest.raises(errors.ShapeDtypeError) as info:
        CASES[case]()
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert "shape" in str(info.value) or "dtype" in str(info.value)


def test_messages_say_what_to_do():
    with pytest.raises(errors.TracerBoolConversionError, match="lax.cond") as info:
        numbax.jit(lambda x: x if x > 0 else -x)(1.0)
    assert "bool[]" in str(info.value) and "static_argnums" in str(info.value)
    with pytest.raises(errors.NonConcreteBooleanIndexError, match=r"shape \(3,\).*where"):
        numbax.jit(lambda x: x[x > 0])(jnp.ones(3))
    with pytest.raises(errors.ShapeDtypeError, match=r"\(3,\) \(4,\)"):
        jnp.ones(3) + jnp.ones(4)


def test_error_classes_take_a_tracer_or_its_description():
    seen = []

    def f(x):
        seen.append(errors.ConcretizationTypeError(x, "bool()"))
        seen.append(errors.TracerBoolConversionError(x))
        return x

    numbax.make_jaxpr(f)(1.0)
    assert all("traced array with shape f64[]" in str(e) for e in seen)
    assert "in bool()" in str(seen[0])
    assert "a description" in str(errors.TracerIntegerConversionError("a description"))


def test_escaped_tracer_is_a_type_error():
    leaked = []
    numbax.make_jaxpr(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(errors.UnexpectedTracerError) as info:
        numbax.jit(lambda y: y + leaked[0])(1.0)
    assert isinstance(info.value, TypeError)


def test_jaxpr_type_error_is_the_public_class():
    assert core.JaxprTypeError is errors.JaxprTypeError
    closed = numbax.make_jaxpr(lambda x: x * 2.0)(1.0)
    bad = core.Jaxpr(closed.jaxpr.constvars, [], closed.jaxpr.eqns, closed.jaxpr.outvars)
    with pytest.raises(errors.JaxprTypeError, match="before it is bound"):
        typecheck.typecheck_jaxpr(bad)
