"""pmap's quick path for repeated calls of Arrays (parallel/pmap.py `_Fast`): the second and
later calls skip binding, abstract evaluation and the argument checks, and must give what the
first call gave (values, dtypes, weak types, shardings) for mapped and broadcast arguments,
out_axes, collectives and results fed back in; traced calls, overrides and new shapes still
take the full path. Compiled in the workers (jit on), over 2 virtual CPU devices."""
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.lax.shard_map import shard_map_p
from tests.virtual_devices import cpu_devices

N = 2


two_devices = cpu_devices(N)


@pytest.fixture
def no_bind(monkeypatch):
    """Makes binding shard_map_p (the full path) an error from now on."""
    def refuse():
        def bind(*args, **params):
            raise AssertionError("the full path ran")
        monkeypatch.setattr(shard_map_p, "bind", bind)
    return refuse


def _same(a, b) -> None:
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.weak_type == b.weak_type
    assert a.sharding == b.sharding
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_repeated_calls_give_what_the_first_gave(no_bind):
    x = jnp.asarray(np.arange(N * 3, dtype=np.float32).reshape(N, 3))
    w = jnp.asarray(np.array([1.0, -2.0, 0.5], np.float32))
    cases = [
        (numbax.pmap(lambda v: v + 1), (x,), np.asarray(x) + 1),
        (numbax.pmap(lambda v, u: v * u, in_axes=(0, None)), (x, w),
         np.asarray(x) * np.asarray(w)),
        (numbax.pmap(lambda v: lax.psum(v, "i"), axis_name="i"), (x,),
         np.broadcast_to(np.asarray(x).sum(0), (N, 3))),
        (numbax.pmap(lambda v: (v.sum(), v * 2), out_axes=(0, 1)), (x,),
         (np.asarray(x).sum(1), (np.asarray(x) * 2).T)),
        (numbax.pmap(lambda v: v.sum() * 2.0 + 1), (x,), np.asarray(x).sum(1) * 2 + 1),
    ]
    firsts = [f(*args) for f, args, _ in cases]
    no_bind()
    for (f, args, want), first in zip(cases, firsts, strict=True):
        for _ in range(3):
            again = f(*args)
            for a, b, c in zip(numbax.tree_util.tree_leaves(again),
                               numbax.tree_util.tree_leaves(first),
                               numbax.tree_util.tree_leaves(want), strict=True):
                _same(a, b)
                np.testing.assert_allclose(np.asarray(a), c, rtol=1e-6)


def test_pytrees_of_arrays(no_bind):
    """The training-step shape: a dict of parameters broadcast, a batch mapped."""
    def step(params, batch):
        grads = {k: lax.pmean(batch.sum() * v, "i") for k, v in params.items()}
        return {k: params[k] - 0.1 * grads[k] for k in params}, batch.sum()

    f = numbax.pmap(step, axis_name="i", in_axes=(None, 0))
    params = {"b": jnp.asarray(np.float32(0.5)), "w": jnp.asarray(np.ones(3, np.float32))}
    batch = jnp.asarray(np.arange(N * 2, dtype=np.float32).reshape(N, 2))
    first = f(params, batch)
    no_bind()
    for _ in range(2):
        again = f(params, batch)
        assert numbax.tree_util.tree_structure(again) == \
            numbax.tree_util.tree_structure(first)
        for a, b in zip(numbax.tree_util.tree_leaves(again),
                        numbax.tree_util.tree_leaves(first), strict=True):
            _same(a, b)
    mean = np.arange(N * 2, dtype=np.float32).reshape(N, 2).sum(1).mean()
    np.testing.assert_allclose(np.asarray(again[0]["w"]), np.full((N, 3), 1 - 0.1 * mean))


def test_results_fed_back_in(no_bind):
    step = numbax.pmap(lambda v: lax.pmean(v, "i") * 0.5 + v, axis_name="i")
    x0 = np.arange(N * 4, dtype=np.float32).reshape(N, 4)
    x = step(jnp.asarray(x0))  # an Array in, a ShardedArray out
    x = step(x)  # a ShardedArray in: the full path once more
    no_bind()
    want = x0
    for _ in range(2):
        want = want.mean(0) * 0.5 + want
    for _ in range(5):
        x = step(x)
        want = want.mean(0) * 0.5 + want
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-5)


def test_new_shapes_dtypes_traces_and_overrides_take_the_full_path():
    f = numbax.pmap(lambda v: v * 2)
    x = jnp.asarray(np.ones((N, 3), np.float32))
    _same(f(x), f(x))
    for y in (np.ones((N, 5), np.float32), np.ones((N, 3), np.int32)):
        got = f(jnp.asarray(y))
        assert got.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(got), y * 2)
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(x)), np.full((N, 3), 2.0))
    grad = numbax.grad(lambda v: f(v).sum())(x)
    np.testing.assert_array_equal(np.asarray(grad), np.full((N, 3), 2.0))
    np.testing.assert_array_equal(np.asarray(numbax.vmap(f)(jnp.stack([x, x]))),
                                  np.full((2, N, 3), 2.0))
    with numbax.config.override("jax_enable_x64", True):
        wide = f(jnp.asarray(np.ones((N, 3))))
        assert wide.dtype == np.float64
    assert f(x).dtype == np.float32


def test_threads_share_the_quick_path():
    import threading

    f = numbax.pmap(partial(jnp.multiply, 3.0))
    errors = []

    def caller(seed: int) -> None:
        try:
            for k in range(20):
                x = np.full((N, 2), float(seed * 100 + k), np.float32)
                np.testing.assert_array_equal(np.asarray(f(jnp.asarray(x))), 3 * x)
        except BaseException as err:  # noqa: BLE001 - re-raised below
            errors.append(err)

    threads = [threading.Thread(target=caller, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
