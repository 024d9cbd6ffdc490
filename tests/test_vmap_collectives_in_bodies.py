"""Collectives and axis_index inside loop, branch and remat bodies under a named vmap (and in a
one-device shard_map body, which runs as one): each body is batched under the vmap's axis name,
so the collective sees the whole axis. Expected values are closed forms over the inputs (JAX
0.10.2 prints the same numbers for every case)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

X = np.arange(3.0)


def _psum_in_fori(x):
    return lax.fori_loop(0, 2, lambda k, c: c + lax.psum(x, "b"), 0.0)


def _unbatched_psum_in_fori(x):  # no operand of the loop depends on x
    return x + lax.fori_loop(0, 2, lambda k, c: c + lax.psum(1.0, "b"), 0.0)


def _pmean_in_scan(x):
    return lax.scan(lambda c, _: (c + lax.pmean(x, "b"), None), 0.0, None, length=3)[0]


def _psum_in_cond(x):
    return lax.cond(True, lambda v: lax.psum(v, "b"), lambda v: v, x)


def _psum_in_cond_per_example(x):  # the predicate differs between examples
    return lax.cond(x > 0, lambda v: lax.psum(v, "b"), lambda v: v, x)


def _psum_in_checkpoint(x):
    return numbax.checkpoint(lambda v: lax.psum(jnp.sin(v), "b"))(x)


def _axis_index_in_fori(x):
    return lax.fori_loop(0, 2, lambda k, c: c + lax.axis_index("b"), 0)


def _grad_through_scan(x):
    body = lambda v: lax.scan(lambda c, _: (c + lax.psum(v * v, "b"), None), 0.0, None,
                              length=2)[0]
    return numbax.grad(body)(x)


def _pmax_in_while(x):
    return lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] + lax.pmax(x, "b")),
                          (0, 0.0))[1]


CASES = {
    "psum_in_fori": (_psum_in_fori, np.full(3, 2 * X.sum())),
    "unbatched_psum_in_fori": (_unbatched_psum_in_fori, X + 2 * 3),
    "pmean_in_scan": (_pmean_in_scan, np.full(3, 3 * X.mean())),
    "psum_in_cond": (_psum_in_cond, np.full(3, X.sum())),
    "psum_in_cond_per_example": (_psum_in_cond_per_example,
                                 np.where(X > 0, X.sum(), X)),
    "psum_in_checkpoint": (_psum_in_checkpoint, np.full(3, np.sin(X).sum())),
    "axis_index_in_fori": (_axis_index_in_fori, 2 * np.arange(3)),
    # d/dv_i of 2 psum(v^2): psum's transpose sums the 3 examples' cotangents
    "grad_through_scan": (_grad_through_scan, 2 * 3 * 2 * X),
    "pmax_in_while": (_pmax_in_while, np.full(3, 2 * X.max())),
}


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_collective_in_a_body_sees_the_whole_axis(name, jitted):
    f, want = CASES[name]
    g = numbax.vmap(f, axis_name="b")
    if jitted:
        g = numbax.jit(g)
    got = g(jnp.asarray(X))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_nested_vmaps_each_body_meets_its_own_axis():
    def inner(x):
        return lax.fori_loop(0, 1, lambda k, c: c + lax.psum(x, "i") * lax.axis_index("o"),
                             0.0)
    x = np.arange(6.0).reshape(2, 3)
    got = numbax.vmap(numbax.vmap(inner, axis_name="i"), axis_name="o")(jnp.asarray(x))
    want = x.sum(axis=1, keepdims=True) * np.arange(2)[:, None] * np.ones((1, 3))
    np.testing.assert_allclose(np.asarray(got), want)


def test_one_device_shard_map_runs_a_collective_in_a_loop():
    mesh = numbax.sharding.Mesh(numbax.devices()[:1], ("i",))
    P = numbax.sharding.PartitionSpec

    def body(x):
        return lax.fori_loop(0, 3, lambda k, c: c + lax.psum(x, "i"), jnp.zeros_like(x))
    f = numbax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    x = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(f(jnp.asarray(x))), 3 * x)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(jnp.asarray(x))), 3 * x)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_per_example_trip_counts_with_a_collective_step_in_lockstep(jitted):
    def f(x):  # examples step together while any goes on; a finished one keeps its carry
        return lax.while_loop(lambda c: c[0] < x, lambda c: (c[0] + lax.psum(1.0, "b"),
                                                             c[1] + lax.psum(x, "b")),
                              (0.0, 0.0))
    g = numbax.vmap(f, axis_name="b")
    if jitted:
        g = numbax.jit(g)
    x = np.array([0.0, 1.0, 4.0])
    counts, sums = g(jnp.asarray(x))
    steps = np.array([0, 1, 2])  # c grows by 3 a step: 0 -> 3 -> 6
    np.testing.assert_allclose(np.asarray(counts), 3.0 * steps)
    np.testing.assert_allclose(np.asarray(sums), x.sum() * steps)


def test_a_loop_without_collectives_keeps_per_example_trip_counts():
    f = lambda x: lax.while_loop(lambda c: c < x, lambda c: c + 1.0, 0.0)
    np.testing.assert_allclose(np.asarray(numbax.vmap(f, axis_name="b")(jnp.asarray(X))),
                               np.ceil(X))
