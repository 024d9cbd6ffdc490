"""The jit dispatch fast path: one closure per signature, read-only outputs, config respected."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.array import Array
from numbax._src.config import config


def _x(n=10, dtype=np.float64):
    return jnp.asarray(np.arange(n, dtype=dtype))


def test_fast_path_is_used_and_correct():
    f = numbax.jit(lambda x: x + 1)
    x = _x()
    first = f(x)  # slow path: compiles, records the closure
    assert len(f._fast) == 1
    fast = next(iter(f._fast.values()))
    calls = []
    f._fast[next(iter(f._fast))] = lambda args: calls.append(1) or fast(args)
    second = f(x)
    assert calls == [1]
    np.testing.assert_array_equal(np.asarray(first), np.arange(10.0) + 1)
    np.testing.assert_array_equal(np.asarray(second), np.arange(10.0) + 1)
    assert type(second) is Array and second.dtype == np.float64


def test_fast_outputs_are_read_only_and_inputs_untouched():
    f = numbax.jit(lambda x: (x * 2, x.reshape(2, 5), x))
    x = _x()
    for _ in range(2):  # slow path, then fast path
        a, b, c = f(x)
        for out in (a, b, c):
            assert not np.asarray(out).flags.writeable
            with pytest.raises(ValueError):
                np.asarray(out)[0] = 5.0
        np.testing.assert_array_equal(np.asarray(b), np.arange(10.0).reshape(2, 5))
        np.testing.assert_array_equal(np.asarray(c), np.arange(10.0))
        assert not np.shares_memory(np.asarray(c), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(x), np.arange(10.0))


@pytest.mark.parametrize("make_out", [
    lambda x: x + 1,
    lambda x: (x + 1, x - 1),
    lambda x: {"b": x * 3, "a": [x, x + 2]},
])
def test_output_trees(make_out):
    f = numbax.jit(make_out)
    x = _x(4)
    slow, fast = f(x), f(x)
    want = make_out(np.arange(4.0))
    import numbax.tree_util as tu
    for got in (slow, fast):
        assert tu.tree_structure(got) == tu.tree_structure(want)
        for g, w in zip(tu.tree_leaves(got), tu.tree_leaves(want)):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_new_signature_retraces():
    traces = []

    def f(x):
        traces.append(x.shape)
        return x * 2

    g = numbax.jit(f)
    g(_x(3))
    g(_x(3))
    g(_x(4))
    g(_x(4, np.float32))
    g(jnp.asarray(2.0))  # weakly typed vs strong: another signature
    g(_x(3))
    assert traces == [(3,), (4,), (4,), ()]
    np.testing.assert_array_equal(np.asarray(g(_x(4, np.float32))), np.arange(4.0) * 2)


def test_fast_path_respects_disable_jit_and_debug_nans():
    side = []

    def f(x):
        side.append(1)
        return jnp.log(x)

    g = numbax.jit(f)
    x = jnp.asarray(np.array([1.0, 2.0]))
    g(x)
    g(x)
    assert len(side) == 1
    with numbax.disable_jit():
        g(x)
    assert len(side) == 2  # ran eagerly, not through the cached closure
    with config.override("jax_debug_nans", True):
        with pytest.raises(FloatingPointError):
            g(jnp.asarray(np.array([-1.0, 2.0])))
    g(x)
    assert config._fast_ctx is not None


def test_numpy_and_mixed_args_take_the_slow_path():
    g = numbax.jit(lambda x, y: x + y)
    out = g(np.arange(3.0), _x(3))
    np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(3.0))
    assert g._fast == {}
    out = g(_x(3), _x(3))
    assert len(g._fast) == 1
    np.testing.assert_array_equal(np.asarray(g(np.ones(3), _x(3))), np.arange(3.0) + 1)


def test_jit_inside_grad_is_traced_not_dispatched():
    g = numbax.jit(lambda x: jnp.sum(x * x))
    x = _x(3)
    g(x)
    np.testing.assert_allclose(np.asarray(numbax.grad(g)(x)), 2 * np.arange(3.0))


def test_cpu_threads_option():
    old = config.cpu_threads
    try:
        config.update("cpu_threads", 1)
        assert config.cpu_threads == 1
        with pytest.raises(ValueError, match="cpu_threads"):
            config.update("cpu_threads", -1)
        with pytest.raises(ValueError, match="cpu_threads"):
            config.update("cpu_threads", "2")
    finally:
        config.update("cpu_threads", old)


def test_pytree_arguments_take_the_tree_fast_path():
    traces = []

    def f(params, x):
        traces.append(1)
        return [w * x + b for w, b in params]

    g = numbax.jit(f)
    params = [(_x(3), _x(3)), (_x(3) * 2, _x(3))]
    x = _x(3)
    first = g(params, x)
    assert len(g._fast_tree) == 1
    second = g(params, x)
    assert traces == [1]
    for got in (first, second):
        assert isinstance(got, list) and len(got) == 2
        np.testing.assert_array_equal(np.asarray(got[1]), 2 * np.arange(3.0) ** 2 + np.arange(3))
    # another structure (tuple instead of list, dict keys) is another signature
    g(tuple(params), x)
    assert traces == [1, 1]
    h = numbax.jit(lambda d: d["a"] - d["b"])
    np.testing.assert_array_equal(np.asarray(h({"a": _x(2), "b": _x(2)})), [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(h({"a": _x(2), "b": _x(2) * 3})), [0.0, -2.0])
    np.testing.assert_array_equal(np.asarray(h({"b": _x(2), "a": _x(2) * 3})), [0.0, 2.0])
    # a numpy leaf takes the host values' path and gives the same numbers
    params_np = [(np.asarray(w), b) for w, b in params]
    np.testing.assert_array_equal(np.asarray(g(params_np, x)[1]), np.asarray(first[1]))
    assert traces == [1, 1]  # same avals: no retrace


def test_pytrees_of_numpy_values_take_the_host_fast_path(monkeypatch):
    """A numpy user's call, parameters as a list of (w, b) numpy arrays and a Python scalar
    in the tree, takes a fast path keyed by the tree and each leaf's shape, dtype and layout
    (or scalar type): new values give new results, an output that is an input leaf is a copy,
    and a leaf of another layout, dtype or a scalar too large for int32 is another key."""
    traces = []

    def f(params, x, scale):
        traces.append(1)
        return [scale * (x @ w) + b for w, b in params], params[0][1]

    g = numbax.jit(f)
    rng = np.random.default_rng(3)
    params = [(rng.standard_normal((3, 4)).astype(np.float32), np.ones(4, np.float32)),
              (rng.standard_normal((3, 4)).astype(np.float32), np.zeros(4, np.float32))]
    x = rng.standard_normal((2, 3)).astype(np.float32)

    def want(params, x, scale):
        return [scale * (x.astype(np.float64) @ w) + b for w, b in params]

    g(params, x, 2.0)
    slow = []
    real_slow = type(g)._call_slow
    monkeypatch.setattr(type(g), "_call_slow",
                        lambda self, *a: slow.append(1) or real_slow(self, *a))
    for scale in (0.5, -3.0):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        params[1] = (rng.standard_normal((3, 4)).astype(np.float32), params[1][1])
        outs, b0 = g(params, x, scale)
        for got, ref in zip(outs, want(params, x, scale)):
            assert got.dtype == np.float32  # the Python float stays weak
            np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5)
    assert slow == [] and traces == [1]
    # the output that is params[0][1] does not share the caller's memory
    params[0][1][:] = 7.0
    np.testing.assert_array_equal(np.asarray(b0), np.ones(4))
    # a Fortran-ordered leaf, another dtype, an int past int32: other keys, same numbers
    fortran = [(np.asfortranarray(w), b) for w, b in params]
    np.testing.assert_allclose(np.asarray(g(fortran, x, 1.0)[0][1]),
                               want(params, x, 1.0)[1], rtol=1e-5)
    as64 = [(w.astype(np.float64), b) for w, b in params]
    assert g(as64, x, 1.0)[0][0].dtype == np.float64
    np.testing.assert_allclose(np.asarray(g(params, x, 2**40)[0][0]),
                               want(params, x, 2**40)[0], rtol=1e-5)
    assert len(slow) == 3
