"""numbax.jit against eager evaluation and numpy; tracing, caching and argument handling."""
import re
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax.errors import NumbaxTypeError, UnexpectedTracerError

rng = np.random.default_rng(0)
X = rng.normal(size=(4, 5))
V = rng.normal(size=5)


def _check(f, *args, rtol=1e-12, atol=1e-12):
    """The one helper comparing jit with eager (and both with each other's dtype and shape)."""
    got = numbax.jit(f)(*args)
    want = f(*args)
    got_l, want_l = numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        assert isinstance(g, numbax.Array)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
    return got


def selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * jnp.where(x > 0, x, alpha * jnp.expm1(x))


def softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def logsumexp(x):
    m = jnp.max(x)
    return jnp.log(jnp.sum(jnp.exp(x - m))) + m


def mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return -jnp.mean(jnp.sum(y * (logits - logsumexp_rows(logits)), axis=-1))


def logsumexp_rows(z):
    m = jnp.max(z, axis=-1, keepdims=True)
    return jnp.log(jnp.sum(jnp.exp(z - m), axis=-1, keepdims=True)) + m


@pytest.mark.parametrize("f", [
    lambda x, v: x * 2.0 + v,
    lambda x, v: jnp.sin(x) * jnp.cos(v) - 1,
    lambda x, v: jnp.maximum(x, 0.0) / (1.0 + jnp.abs(v)),
    lambda x, v: jnp.where(x > v, x, v) ** 2,
    lambda x, v: (x.astype(np.float32) + v.astype(np.float32)) * 3,
    lambda x, v: jnp.tanh(x) + jnp.log1p(jnp.abs(v)) + jnp.exp(-x * x),
])
def test_elementwise_with_broadcasting(f):
    _check(f, X, V, rtol=2e-6)


def test_selu_and_scalar_args():
    _check(selu, X)
    _check(lambda x, s: x * s + 1, X, 2.5)


def test_integer_and_bool():
    a = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    b = np.full(4, 3, dtype=np.int32)
    _check(lambda a, b: (a * b + 7) // b, a, b)
    _check(lambda a, b: a % b, a, b)
    _check(lambda a, b: (a > 0) & (b > 2), a, b)
    _check(lambda a: jnp.sum(a, axis=0), a)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(axis, keepdims):
    _check(lambda x: (jnp.sum(x * x, axis=axis, keepdims=keepdims),
                      jnp.max(x, axis=axis, keepdims=keepdims),
                      jnp.min(x, axis=axis, keepdims=keepdims)), X)


def test_softmax_logsumexp_against_numpy():
    got = _check(softmax, X)
    e = np.exp(X - X.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(_check(logsumexp, X), np.log(np.exp(X).sum()), rtol=1e-12)


def test_nan_propagates_through_max():
    x = X.copy()
    x[1, 2] = np.nan
    got = numbax.jit(lambda x: jnp.max(x, axis=1))(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x.max(axis=1)))


def test_matmul_chain():
    a = rng.normal(size=(5, 5))
    got = _check(lambda a: (a @ a.T @ a) + a, a, rtol=1e-10)
    np.testing.assert_allclose(got, a @ a.T @ a + a, rtol=1e-10)


MLP_PARAMS = ((rng.normal(size=(5, 8)) * 0.3, np.zeros(8)), (rng.normal(size=(8, 3)) * 0.3,
                                                            np.zeros(3)))
Y = np.eye(3)[rng.integers(0, 3, size=4)]


def test_mlp_loss_and_grad():
    _check(mlp_loss, MLP_PARAMS, X, Y, rtol=1e-10)
    _check(numbax.grad(mlp_loss), MLP_PARAMS, X, Y, rtol=1e-10)
    # grad of jit (the inner jit is inlined) equals grad of the plain function
    g1 = numbax.grad(numbax.jit(mlp_loss))(MLP_PARAMS, X, Y)
    g2 = numbax.grad(mlp_loss)(MLP_PARAMS, X, Y)
    for a, b in zip(numbax.tree_util.tree_leaves(g1), numbax.tree_util.tree_leaves(g2)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_vmap_under_and_over_jit():
    f = lambda x: jnp.sum(jnp.sin(x) * x)  # noqa: E731
    want = np.sum(np.sin(X) * X, axis=1)
    np.testing.assert_allclose(numbax.jit(numbax.vmap(f))(X), want, rtol=1e-12)
    np.testing.assert_allclose(numbax.vmap(numbax.jit(f))(X), want, rtol=1e-12)
    np.testing.assert_allclose(numbax.jit(numbax.jit(f))(X[0]), want[0], rtol=1e-12)


def test_pytrees_in_and_out():
    def f(d):
        return {"s": d["a"] + d["b"], "t": (d["a"] * 2,)}
    out = numbax.jit(f)({"a": X, "b": V})
    np.testing.assert_allclose(out["s"], X + V)
    np.testing.assert_allclose(out["t"][0], X * 2)


def test_retrace_only_on_new_signature():
    traces = []

    def f(x):
        traces.append(1)
        return x + 1

    g = numbax.jit(f)
    a = jnp.asarray(V)
    g(a)
    g(a)
    g(jnp.asarray(V * 2))
    assert len(traces) == 1
    g(jnp.asarray(X))
    assert len(traces) == 2
    g(jnp.asarray(V.astype(np.float32)))
    assert len(traces) == 3
    g(V)  # numpy input of the same aval hits the same entry
    assert len(traces) == 3


def test_static_argnums_and_argnames():
    traces = []

    def f(x, n, *, mode="sum"):
        traces.append(1)
        return jnp.sum(x ** n) if mode == "sum" else jnp.max(x ** n)

    g = numbax.jit(f, static_argnums=1, static_argnames="mode")
    np.testing.assert_allclose(g(V, 2), np.sum(V ** 2))
    np.testing.assert_allclose(g(V, 2), np.sum(V ** 2))
    np.testing.assert_allclose(g(V, 3), np.sum(V ** 3))
    np.testing.assert_allclose(g(V, 2, mode="max"), np.max(V ** 2))
    assert len(traces) == 3


def test_unhashable_static_arg_names_the_argument():
    g = numbax.jit(lambda x, n: x * len(n), static_argnums=1)
    with pytest.raises(TypeError, match="static argument 1 .* list"):
        g(V, [1, 2])


def test_bad_inputs():
    with pytest.raises(TypeError, match="jit: fun has type int"):
        numbax.jit(3)
    with pytest.raises(ValueError, match="backend"):
        numbax.jit(lambda x: x, backend="tpu")
    with pytest.raises(TypeError, match="argument leaf 0 .* str"):
        numbax.jit(lambda x: x)("hello")


@pytest.mark.parametrize("kwargs,match", [
    ({"static_argnums": 1.5}, r"static_argnums has 1.5 of type float, expected an int"),
    ({"static_argnums": (0, 1.5)}, r"static_argnums has an entry 1.5 of type float"),
    ({"static_argnums": "1"}, r"static_argnums has an entry '1' of type str"),
    ({"static_argnames": 5}, r"static_argnames has 5 of type int, expected a string"),
    ({"static_argnames": ("n", 5)}, r"static_argnames has an entry 5 of type int"),
    ({"donate_argnums": 0.5}, r"donate_argnums has 0.5 of type float"),
], ids=["argnums-float", "argnums-entry", "argnums-str", "argnames-int", "argnames-entry",
        "donate-float"])
def test_bad_static_and_donate_specs_name_the_argument(kwargs, match):
    """issue 21 item 20: these used to surface "'float' object is not iterable"."""
    with pytest.raises(numbax.errors.NumbaxTypeError, match=match):
        numbax.jit(lambda x, n: x * n, **kwargs)
    g = numbax.jit(lambda x, n: x * n, static_argnums=np.int64(1), static_argnames=["n"])
    np.testing.assert_allclose(g(V, 2), V * 2)


def test_donate_argnums_accepted_and_decorator_form():
    @numbax.jit
    def f(x):
        return x - 1

    g = numbax.jit(lambda x: x * 2, donate_argnums=(0,))
    np.testing.assert_allclose(g(f(V)), (V - 1) * 2)


def _add(x, y):
    return x + y


def test_donated_eager_and_device_put_arrays_are_deleted():
    """docs/buffer_donation.md: a donated argument an output matches is deleted, any later use
    raises RuntimeError; Arrays made eagerly or by device_put qualify, not ones a numpy
    handle still views (that handle keeps its values)."""
    x = numbax.device_put(np.ones((2, 3)))
    y = numbax.device_put(np.ones((2, 3)))
    z = numbax.jit(_add, donate_argnums=(1,))(x, y)
    np.testing.assert_array_equal(np.asarray(z), np.full((2, 3), 2.0))
    assert y.is_deleted() and not x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        y + 1
    w = jnp.ones((2, 3)) * 3.0  # an eager result
    held = jnp.ones((2, 3)) * 5.0
    view = np.asarray(held)
    f = numbax.jit(_add, donate_argnums=(0,))
    np.testing.assert_array_equal(np.asarray(f(w, x)), np.full((2, 3), 4.0))
    np.testing.assert_array_equal(np.asarray(f(held, x)), np.full((2, 3), 6.0))
    assert w.is_deleted() and not held.is_deleted()
    np.testing.assert_array_equal(view, np.full((2, 3), 5.0))


def test_donate_argnames_and_arguments_passed_by_name():
    """JAX completes donate_argnums and donate_argnames from each other, so a donated
    parameter is donated whether passed by position or by name."""
    x = jnp.ones((2, 3))
    y = jnp.ones((2, 3)) * 2.0
    np.testing.assert_array_equal(np.asarray(numbax.jit(_add, donate_argnums=1)(x, y=y)),
                                  np.full((2, 3), 3.0))
    assert y.is_deleted()
    y = jnp.ones((2, 3)) * 2.0
    numbax.jit(_add, donate_argnames="y")(x, y)
    assert y.is_deleted() and not x.is_deleted()
    with pytest.raises(ValueError, match="static_argnames and donate_argnames cannot"):
        numbax.jit(_add, static_argnames="y", donate_argnames="y")
    with pytest.raises(TypeError, match="donate_argnames has an entry 1 of type int"):
        numbax.jit(_add, donate_argnames=[1])


def test_unusable_donations_warn_as_in_jax():
    """A donated argument no output matches in shape and dtype: JAX's UserWarning, naming it;
    it stays valid."""
    x, y = jnp.ones((2, 3)), jnp.ones((1, 3))
    dt = x.dtype
    aval = numbax.core.ShapedArray((1, 3), dt).str_short()
    with pytest.warns(UserWarning, match=re.escape(f"donated buffers were not usable: {aval}.")):
        numbax.jit(_add, donate_argnums=(1,))(x, y)
    assert not y.is_deleted()
    y = jnp.ones((2, 3))
    with pytest.warns(UserWarning, match="not usable") as caught:
        numbax.jit(_add, donate_argnums=(0, 1))(x, y)  # two donated, one output
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numbax.jit(lambda a, b: (a + b, a - b), donate_argnums=(0, 1))(jnp.ones(3), jnp.ones(3))


def test_debug_nans_turns_donation_off_until_clear_cache():
    """docs/buffer_donation.md: the executable compiled under jax_debug_nans donates nothing
    and is reused once it is off; jit(f).clear_cache() drops it."""
    f = numbax.jit(lambda x: x + 1, donate_argnums=(0,))
    a, b, c = (jnp.ones(3) * 1.0 for _ in range(3))
    with numbax.debug_nans(True):
        f(a)
    f(b)
    f.clear_cache()
    np.testing.assert_array_equal(np.asarray(f(c)), np.full(3, 2.0))
    assert [a.is_deleted(), b.is_deleted(), c.is_deleted()] == [False, False, True]


def test_side_effects_once_and_disable_jit():
    calls = []
    g = numbax.jit(lambda x: (calls.append(type(x).__name__), x + 1)[1])
    g(V)
    g(V)
    assert len(calls) == 1
    with numbax.disable_jit():
        g(V)
    assert calls[-1] == "ndarray"


def test_tracer_leak_detected():
    leaked = []

    @numbax.jit
    def f(x):
        leaked.append(x)
        return x + 1

    f(V)
    with pytest.raises(UnexpectedTracerError):
        jnp.sin(leaked[0])


def test_lower_and_compile():
    lowered = numbax.jit(selu).lower(X)
    assert "def kernel" in lowered.as_text() and "expm1" in str(lowered.jaxpr)
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(X), selu(X), rtol=1e-12)
    with pytest.raises(NumbaxTypeError, match=r"argument leaf 0 compiled with f64\[4,5\] "
                                              r"and called with f64\[5\]"):
        compiled(V)


def test_lower_takes_shape_dtype_structs_and_compiled_takes_the_dynamic_arguments():
    """docs/aot.md: lower() accepts anything with .shape and .dtype; the compiled function
    takes only the non-static arguments, and refuses transformation and other types."""
    f = lambda x, y: 2 * x + y  # noqa: E731
    i32 = numbax.ShapeDtypeStruct((), np.int32)
    compiled = numbax.jit(f).lower(i32, i32).compile()
    out = compiled(np.int32(3), np.int32(4))
    assert out.dtype == np.int32 and int(out) == 10 and not out.weak_type
    with pytest.raises(TypeError, match=r"compiled with i32\[\] and called with f32\[\]"):
        compiled(np.float32(72.0), np.float32(72.0))
    assert int(numbax.jit(f, static_argnums=0).lower(7, 8).compile()(5)) == 19
    assert int(numbax.jit(f, static_argnums=0).lower(10, i32).compile()(np.int32(5))) == 25
    with pytest.raises(TypeError, match="structure"):
        numbax.jit(f, static_argnums=0).lower(7, 8).compile()(7, 5)
    with pytest.raises(TypeError, match="lower: argument leaf 1 is a str"):
        numbax.jit(f).lower(1.0, "y")
    g = numbax.jit(lambda x: x @ jnp.ones(2)).lower(np.ones((3, 2))).compile()
    np.testing.assert_allclose(g(np.ones((3, 2))), [2.0, 2.0, 2.0])
    for transform in (numbax.vmap, numbax.jit):
        with pytest.raises(TypeError, match="cannot be transformed"):
            transform(g)(np.ones((4, 3, 2)) if transform is numbax.vmap else np.ones((3, 2)))
    with pytest.raises(TypeError, match="cannot be transformed"):
        numbax.grad(lambda x: g(x).sum())(np.ones((3, 2)))


def test_debug_nans_names_the_primitive():
    with numbax.config.override("jax_debug_nans", True):
        with pytest.raises(FloatingPointError, match="log"):
            numbax.jit(lambda x: jnp.log(x))(np.array([1.0, -1.0]))


def test_outputs_literal_and_input_passthrough():
    a, b, c = numbax.jit(lambda x: (x, 2.0, x.shape[0]))(V)
    np.testing.assert_array_equal(a, V)
    assert float(b) == 2.0 and int(c) == 5


def test_primitive_without_lowering_runs_its_eager_impl_under_jit():
    """A primitive with no compiled lowering still works under jit: the driver calls its eager
    impl between kernels, with one RuntimeWarning naming the primitive."""
    from numbax._src import core
    p = core.Primitive("mystery_op")
    core.abstract_eval_rules[p] = lambda x: [x]
    core.impl_rules[p] = lambda x: [np.sin(x)]

    def uses_mystery(x):
        return p.bind(x * 2.0) + 1.0

    with pytest.warns(RuntimeWarning, match="mystery_op"):
        got = numbax.jit(uses_mystery)(V)
    np.testing.assert_allclose(got, np.sin(np.asarray(V) * 2.0) + 1.0, rtol=1e-12)


# issue 21 item 17: float16, big-endian inputs and very deep pytrees under jit
_F16 = np.array([-65504.0, -2.5, -0.0, 0.0, 6e-8, 1e-4, 0.33, 1.0, 3.14, 60000.0, np.inf,
                 np.nan], np.float16)


@pytest.mark.parametrize("fn", [
    lambda a: a * 2 + 1, lambda a: jnp.sin(a) * a - jnp.exp(a / 8), lambda a: jnp.sum(a[:9]),
    lambda a: jnp.outer(a[:4], a[:4]) @ a[:4], lambda a: (a.astype(np.float32) / 3),
    lambda a: lax.fori_loop(0, 3, lambda i, c: c * np.float16(1.5) + a, a),
    lambda a: lax.cond(jnp.sum(a[:3]) > 0, lambda: a * 2, lambda: a - 1),
    lambda a: jnp.sort(a) + a.astype(np.float64).astype(np.float16),
], ids=["arith", "transcendental", "sum", "dot", "to-float32", "fori", "cond", "sort-casts"])
def test_float16_under_jit_gives_eager_bits(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = numbax.jit(fn)(_F16)
        want = fn(jnp.asarray(_F16))
    assert got.dtype == want.dtype
    bits = [np.atleast_1d(np.asarray(a)).view(np.uint8) for a in (got, want)]
    np.testing.assert_array_equal(*bits)


def test_float16_warns_once_per_primitive(monkeypatch):
    from numbax._src.compiler.cpu import backend

    monkeypatch.setattr(backend, "_warned_narrow", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numbax.jit(lambda a: jnp.sin(a) * 3)(_F16)  # mul compiles (float32, rounded); sin
        numbax.jit(lambda a: jnp.sin(a) * 5)(_F16)  # runs numpy's float16 loop
    messages = [str(w.message) for w in caught if "float16" in str(w.message)]
    assert len(messages) == 1 and messages[0].startswith("jit: sin on float16 values")


@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i4", ">i8", ">c16", ">u2"])
def test_big_endian_inputs(dtype):
    x = np.arange(1, 7).astype(dtype)
    got = numbax.jit(lambda a: a * 2 + 1)(x)
    assert got.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(np.asarray(got), x.astype(got.dtype) * 2 + 1)
    mixed = numbax.jit(lambda a, b: a + b)(x, x.astype(got.dtype))
    np.testing.assert_array_equal(np.asarray(mixed), 2 * x.astype(got.dtype))
    assert numbax.numpy.asarray(x).dtype.isnative


def test_very_deep_pytree_argument():
    t = 1.5
    for _ in range(5000):
        t = [t]
    out = numbax.jit(lambda tr: numbax.tree_util.tree_map(lambda x: x * 2, tr))(t)
    assert numbax.tree_util.tree_structure(out) == numbax.tree_util.tree_structure(t)
    assert [float(x) for x in numbax.tree_util.tree_leaves(out)] == [3.0]


def test_static_arguments_by_position_or_by_name():
    """As in JAX: static_argnames applies to a positional argument and static_argnums to one
    passed by name (jit completes each from the other through the signature)."""
    traces = []

    def f(x, n, scale=1.0):
        traces.append(n)
        return x * n * scale

    by_name = numbax.jit(f, static_argnames="n")
    assert float(by_name(2.0, 3)) == 6.0 and float(by_name(2.0, n=3)) == 6.0
    assert by_name.static_argnums == (1,) and by_name.static_argnames == ("n",)
    by_num = numbax.jit(f, static_argnums=1)
    assert float(by_num(2.0, n=4)) == 8.0 and by_num.static_argnames == ("n",)
    assert float(numbax.jit(f, static_argnums=(1, 2))(2.0, 3)) == 6.0  # scale: its default
    with pytest.raises(ValueError, match=r"static_argnums=\(5,\), but only accepts 3 positional"):
        numbax.jit(f, static_argnums=5)
    assert all(isinstance(n, int) for n in traces)  # n was never a tracer


def test_jit_wrappers_of_one_function_share_their_executables():
    traces = []

    def f(x):
        traces.append(1)
        return jnp.sin(x) + 1.0

    x = np.linspace(0.0, 1.0, 5)
    numbax.jit(f)(x)
    np.testing.assert_allclose(numbax.jit(f)(x), np.sin(x) + 1.0)  # a new wrapper: no trace
    assert len(traces) == 1
    numbax.jit(f, donate_argnums=0)(x)  # other options: their own table
    assert len(traces) == 2
    g = numbax.jit(lambda v: f(v))  # another function object: its own table
    g(x)
    assert len(traces) == 3
