"""Programs traced again are not built again (compiler/program_key.py, pipeline.compile_with),
and programs that differ in anything a lowering reads never share a build."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import core
from numbax._src.compiler import api, pipeline, program_key
from numbax._src.interpreters import partial_eval as pe

X = np.linspace(-2.0, 3.0, 12).astype(np.float32)


@pytest.fixture
def builds(monkeypatch):
    """The list of programs built from here on (pipeline._build's calls)."""
    built = []
    real = pipeline._build

    def spy(closed, *args):
        built.append(closed)
        return real(closed, *args)

    monkeypatch.setattr(pipeline, "_build", spy)
    numbax.clear_caches()
    yield built
    numbax.clear_caches()


def _key(fun, *args):
    avals = [core.get_aval(np.asarray(a)) for a in args]
    return program_key.key(pe.trace_to_closed_jaxpr(lambda *xs: [fun(*xs)], avals))


def test_a_fresh_lambda_traced_again_is_built_once(builds):
    outs = [numbax.jit(lambda x: jnp.tanh(x * 2.0) + 1.0)(X) for _ in range(3)]
    for out in outs:
        np.testing.assert_allclose(out, np.tanh(X * 2.0) + 1.0, rtol=1e-6, atol=1e-6)
    assert len(builds) == 1


def test_an_eager_loop_called_again_is_built_once(builds):
    def run():
        return lax.fori_loop(0, 3000, lambda i, c: c * 0.999 + 0.001, jnp.asarray(X))

    first, second = run(), run()
    expected = X.copy()
    for _ in range(3000):
        expected = expected * np.float32(0.999) + np.float32(0.001)
    np.testing.assert_allclose(first, expected, rtol=1e-5)
    np.testing.assert_array_equal(first, second)
    assert len(builds) == 1


def test_custom_jvp_rules_made_anew_do_not_defeat_the_memo(builds):
    for _ in range(2):  # relu's jvp closures are new objects at every trace
        out = numbax.jit(lambda x: numbax.nn.relu(x) * 3.0)(X)
        np.testing.assert_array_equal(out, np.maximum(X, 0) * 3.0)
    assert len(builds) == 1


@pytest.mark.parametrize("scale", [0.5, 2.0, -1.0])
def test_closed_over_scalars_give_their_own_programs(builds, scale):
    # each loop iteration's lambda closes over a different Python float: a literal
    for s in (scale, scale + 1.0):
        out = numbax.jit(lambda x: x * s)(X)  # noqa: B023 (called at once: the point)
        np.testing.assert_array_equal(out, X * np.float32(s))
    assert len(builds) == 2


def test_signed_zeros_and_integer_types_are_told_apart(builds):
    pos = numbax.jit(lambda x: x * 0.0)(X[X > 0])
    neg = numbax.jit(lambda x: x * -0.0)(X[X > 0])
    assert not np.signbit(pos).any() and np.signbit(neg).all()
    assert program_key._value_key(0.0) != program_key._value_key(-0.0)
    assert program_key._value_key(1) != program_key._value_key(True)
    assert program_key._value_key(np.float32(1)) != program_key._value_key(np.float64(1))
    assert program_key._value_key(np.nan) == program_key._value_key(np.nan)  # same bits


def test_params_that_differ_give_different_keys():
    a = _key(lambda x: lax.cumsum(x, axis=0, reverse=True), X)
    b = _key(lambda x: lax.cumsum(x, axis=0, reverse=False), X)
    c = _key(lambda x: lax.cumsum(x, axis=0, reverse=True), X)
    assert a is not None and a == c and a != b
    assert _key(lambda x: x + 1, X) != _key(lambda x: x + 1, X.astype(np.float64))
    assert _key(lambda x: x.sum(), X) != _key(lambda x: x.sum(), X.reshape(3, 4))


def test_programs_with_consts_are_built_each_time_and_see_their_values(builds):
    w = np.arange(12, dtype=np.float32)
    first = numbax.jit(lambda x: x + w)(X)
    w[:] = -1.0  # the user's array changed in place: a fresh trace must see it
    second = numbax.jit(lambda x: x + w)(X)
    np.testing.assert_array_equal(first, X + np.arange(12, dtype=np.float32))
    np.testing.assert_array_equal(second, X - 1.0)
    assert len(builds) == 2
    assert _key(lambda x: x + w, X) is None


def test_other_settings_build_again(builds):
    x, w = X.reshape(3, 4), np.ones((4, 5), np.float32)
    expected = np.tanh(x @ w + 1.0)
    for epilogues in (False, True):  # (a fresh lambda each: jit's own cache is per function)
        with numbax.config.override("cpu_epilogues", epilogues):
            out = numbax.jit(lambda x, w: jnp.tanh(x @ w + 1.0))(x, w)  # a dense layer
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    assert len(builds) == 2


def test_clear_caches_forgets_built_programs(builds):
    numbax.jit(lambda x: x - 3.0)(X)
    numbax.clear_caches()
    np.testing.assert_array_equal(numbax.jit(lambda x: x - 3.0)(X), X - 3.0)
    assert len(builds) == 2


def test_the_memo_keeps_at_most_its_size(builds, monkeypatch):
    monkeypatch.setattr(pipeline, "MEMO_SIZE", 3)
    for k in range(5):
        numbax.jit(lambda x: x + float(k))(X)  # noqa: B023 (called at once)
    assert len(pipeline._BUILT) == 3
    numbax.jit(lambda x: x + 0.0)(X)  # dropped first: built again
    numbax.jit(lambda x: x + 4.0)(X)  # kept
    assert len(builds) == 6


def test_settings_without_a_hash_build_every_time(builds):
    closed = pe.trace_to_closed_jaxpr(lambda x: [x * 2.0], [core.get_aval(X)])
    for _ in range(2):  # (a device object without a hash stands for one here)
        exe = pipeline.compile_with(closed, api.get_backend("cpu"), device=[])
        np.testing.assert_array_equal(exe(X)[0], X * 2.0)
    assert len(builds) == 2
