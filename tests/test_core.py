"""The traced core: jaxpr printing, tracing errors, the trace stack, leaks, eval_jaxpr."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import core, typecheck
from numbax.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
)


@pytest.fixture
def x32():
    numbax.config.update("jax_enable_x64", False)
    yield
    numbax.config.update("jax_enable_x64", True)


def test_jaxpr_text_matches_jax_form(x32):
    jaxpr = numbax.make_jaxpr(lambda x: jnp.log(x) / 0.693)(1.0)
    assert str(jaxpr) == (
        "{ lambda ; a:f32[]. let b:f32[] = log a; c:f32[] = div b 0.693:f32[] in (c,) }"
    )


def test_jaxpr_text_multiline_for_long_programs(x32):
    jaxpr = numbax.make_jaxpr(lambda x: x * 2 + 1)(np.ones(3, np.float32))
    assert str(jaxpr) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = mul a 2.0:f32[]\n"
        "    c:f32[3] = add b 1.0:f32[]\n"
        "  in (c,) }"
    )


def test_jaxpr_params_and_constvars():
    big = np.arange(6.0).reshape(2, 3)
    jaxpr = numbax.make_jaxpr(lambda x: lax.reduce_sum(x * big, (0,)))(np.ones((2, 3)))
    text = str(jaxpr)
    assert text.startswith("{ lambda a:f64[2,3]; b:f64[2,3]. let")
    assert "reduce_sum[axes=(0,)]" in text
    assert len(jaxpr.consts) == 1 and np.array_equal(jaxpr.consts[0], big)


def test_make_jaxpr_over_pytrees_and_static_argnums():
    def f(params, x, n):
        return {"y": params["w"] * x ** n, "z": params["b"]}

    jaxpr = numbax.make_jaxpr(f, static_argnums=(2,))({"w": 1.0, "b": 2.0}, np.ones(3), 2)
    assert [a.shape for a in jaxpr.in_avals] == [(), (), (3,)]
    assert "integer_pow[y=2]" in str(jaxpr)
    out = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, 2.0, 3.0, np.arange(3.0))
    np.testing.assert_allclose(np.asarray(out[0]), 3.0 * np.arange(3.0) ** 2)  # leaves: b, w, x
    assert float(out[1]) == 2.0


def test_eval_shape_and_shape_dtype_struct():
    out = numbax.eval_shape(lambda x, y: {"s": x @ y if hasattr(jnp, "matmul") else x, "t": x},
                            numbax.ShapeDtypeStruct((2, 3), np.float32),
                            numbax.ShapeDtypeStruct((3, 4), np.float32))
    assert out["t"].shape == (2, 3) and out["t"].dtype == np.float32


def test_python_control_flow_on_tracer_raises_with_advice():
    def f(x):
        return x if x > 0 else -x

    with pytest.raises(ConcretizationTypeError, match="static_argnums") as info:
        numbax.make_jaxpr(f)(1.0)
    assert "lax.cond" in str(info.value)
    assert isinstance(info.value, TypeError)
    assert core.trace_stack_depth() == 1  # nothing left half-built


def test_int_and_float_of_tracer_raise():
    for conv in (int, float, bool):
        with pytest.raises(ConcretizationTypeError):
            numbax.make_jaxpr(lambda x, conv=conv: conv(x))(1.0)
    assert core.trace_stack_depth() == 1


def test_python_control_flow_works_under_grad():
    f = lambda x: x ** 2 if x > 0 else -x  # noqa: E731
    assert float(numbax.grad(f)(3.0)) == 6.0
    assert float(numbax.grad(f)(-3.0)) == -1.0


def test_np_asarray_on_tracer_is_a_clear_error():
    with pytest.raises(TracerArrayConversionError, match="numbax.numpy"):
        numbax.make_jaxpr(lambda x: np.asarray(x))(1.0)
    assert core.trace_stack_depth() == 1


def test_leaked_tracer_raises_at_use():
    leaked = []

    def f(x):
        leaked.append(x)
        return x

    numbax.make_jaxpr(f)(1.0)
    with pytest.raises(UnexpectedTracerError, match="escaped"):
        leaked[0] + 1


def test_shape_error_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3,\) \(4,\)"):
        jnp.add(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=r"\(3,\), \(4,\)"):
        lax.add(np.ones(3), np.ones(4))


def test_eval_jaxpr_composes_with_transforms():
    closed = numbax.make_jaxpr(lambda x: jnp.sin(x) * x)(1.0)
    g = numbax.grad(lambda x: core.eval_jaxpr(closed.jaxpr, closed.consts, x)[0])(0.5)
    np.testing.assert_allclose(float(g), np.cos(0.5) * 0.5 + np.sin(0.5))


def test_typecheck_catches_bad_jaxpr():
    closed = numbax.make_jaxpr(lambda x: jnp.sin(x))(1.0)
    jaxpr = closed.jaxpr
    bad = core.Jaxpr([], [], jaxpr.eqns, jaxpr.outvars)  # input never bound
    with pytest.raises(core.JaxprTypeError, match="before it is bound"):
        typecheck.typecheck_jaxpr(bad)


def test_threads_trace_independently():
    import threading

    results = {}

    def work(i):
        results[i] = str(numbax.make_jaxpr(lambda x: jnp.sin(x) * i)(1.0))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(f"mul b {float(i)}:f64[]" in results[i] for i in range(4))


def test_printed_params_never_contain_raw_line_breaks():
    name = "i\nimport os  # hostile"
    jaxpr = numbax.make_jaxpr(numbax.vmap(lambda v: lax.psum(v, name), axis_name=name))(
        np.ones(2))
    assert "\nimport os" not in str(jaxpr)
    p = core.Primitive("test_params")
    eqn = core.JaxprEqn(p, [], [], {"axis_name": name})
    assert "\n" not in core.pp_eqn(eqn, core.PrintNames(), 0)


def test_float32_constants_print_as_jax_prints_them(x32):
    # a constant converted to float32 prints the value float32 holds (JAX: 1.6699999570846558);
    # a weak-typed Python scalar prints as written (test_jaxpr_text_matches_jax_form)
    jaxpr = numbax.make_jaxpr(lambda x: x * 1.67 + 2)(np.ones(3, np.float32))
    assert str(jaxpr) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = mul a 1.6699999570846558:f32[]\n"
        "    c:f32[3] = add b 2.0:f32[]\n"
        "  in (c,) }"
    )
