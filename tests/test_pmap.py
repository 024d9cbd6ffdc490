"""pmap over 4 virtual CPU devices: results vs numpy and vmap, collectives, data-parallel SGD,
errors, worker faults and shared-memory cleanup. One worker pool is shared by the module."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.core import Primitive
from numbax._src.parallel import pool
from tests.virtual_devices import cpu_devices

N = 4
RNG = np.random.default_rng(0)


four_devices = cpu_devices(N, eager=True)


def test_pmap_matches_numpy_per_shard():
    x = RNG.normal(size=(N, 5))
    y = RNG.normal(size=(N, 5))
    out = numbax.pmap(lambda a, b: jnp.sin(a) * b + a.sum())(x, y)
    assert isinstance(out, numbax.Array)
    assert out.shape == (N, 5)
    np.testing.assert_allclose(out, np.sin(x) * y + x.sum(1, keepdims=True))
    assert out.sharding.mesh.devices.tolist() == numbax.devices()[:N]


def test_pmap_maps_keyword_arguments_along_axis_0_as_jax():
    x, y, z = RNG.normal(size=(N, 3)), RNG.normal(size=(N, 3)), RNG.normal(size=(N,))
    f = numbax.pmap(lambda a, b=None, c=1.0: a * c + b, axis_name="i")
    np.testing.assert_allclose(f(x, b=y), x + y)
    np.testing.assert_allclose(f(x, c=z[:, None], b=y), x * z[:, None] + y)
    static = numbax.pmap(lambda a, k, b: a * k + b, static_broadcasted_argnums=(1,))
    np.testing.assert_allclose(static(x, 3, b=y), 3 * x + y)
    with pytest.raises(ValueError, match="in_axes"):  # in_axes names the positional ones
        numbax.pmap(lambda a, b: a + b, in_axes=(0, None))(x, b=y)


def test_pmap_in_axes_out_axes_pytrees_and_fewer_shards():
    x = RNG.normal(size=(3, 2))  # 3 shards on 4 devices
    w = RNG.normal(size=(2,))
    f = numbax.pmap(lambda d, w: {"y": d["a"] * w, "s": (d["a"] @ w)}, in_axes=(0, None),
                    out_axes={"y": 1, "s": 0})
    out = f({"a": x}, w)
    np.testing.assert_allclose(out["y"], (x * w).T)
    np.testing.assert_allclose(out["s"], x @ w)
    xt = RNG.normal(size=(5, 2))
    np.testing.assert_allclose(numbax.pmap(lambda v: v * 2, in_axes=1)(xt), (xt * 2).T)


def test_pmap_of_vmap_and_static_broadcasted_argnums():
    x = RNG.normal(size=(N, 3, 2))
    f = numbax.pmap(numbax.vmap(lambda v: jnp.exp(v).sum()))
    np.testing.assert_allclose(f(x), np.exp(x).sum(-1))

    @partial(numbax.pmap, static_broadcasted_argnums=(0,))
    def scale(k, v):
        return v * k

    np.testing.assert_allclose(scale(3, x), x * 3)
    np.testing.assert_allclose(scale(5, x), x * 5)


def test_collectives_against_numpy():
    x = RNG.normal(size=(N, 3))

    @partial(numbax.pmap, axis_name="i")
    def f(v):
        return (lax.psum(v, "i"), lax.pmean(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"),
                lax.axis_index("i"), lax.psum(1, "i"))

    s, m, mx, mn, idx, count = f(x)
    np.testing.assert_allclose(s, np.broadcast_to(x.sum(0), x.shape))
    np.testing.assert_allclose(m, np.broadcast_to(x.mean(0), x.shape))
    np.testing.assert_array_equal(mx, np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_array_equal(mn, np.broadcast_to(x.min(0), x.shape))
    np.testing.assert_array_equal(idx, np.arange(N))
    np.testing.assert_array_equal(count, np.full(N, N))


def test_large_elementwise_collectives_reduce_scatter_bit_for_bit():
    """Operands from CHUNKED_REDUCE_BYTES up take the reduce-scatter + all-gather path
    (an odd element count, so the ranks' chunks differ in size): the same bits as summing
    the shards in rank order, on every device."""
    from numbax._src.parallel import collectives

    n = collectives.CHUNKED_REDUCE_BYTES // 8 + 13
    x = RNG.normal(size=(N, n))

    @partial(numbax.pmap, axis_name="i")
    def f(v):
        return lax.psum(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"), lax.psum_scatter(
            v[: (n // N) * N].reshape(N, -1), "i")

    s, mx, mn, sc = f(x)
    in_rank_order = x[0].copy()
    for shard in x[1:]:
        in_rank_order += shard
    np.testing.assert_array_equal(s, np.broadcast_to(in_rank_order, x.shape))
    np.testing.assert_array_equal(mx, np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_array_equal(mn, np.broadcast_to(x.min(0), x.shape))
    np.testing.assert_array_equal(sc, in_rank_order[: (n // N) * N].reshape(N, -1))


def test_several_large_psums_in_one_exchange_bit_for_bit():
    """A tuple psum of large operands of two dtypes runs one exchange per dtype, the operands
    laid end to end in the slots (no concatenated copy): each result is its own shape and the
    same bits as summing the shards in rank order."""
    from numbax._src.parallel import collectives

    n = collectives.CHUNKED_REDUCE_BYTES // 16 + 7
    x = RNG.normal(size=(N, n))
    y = RNG.normal(size=(N, 3, n // 3)).astype(np.float32)

    @partial(numbax.pmap, axis_name="i")
    def f(a, b):
        return lax.psum((a, b, a * 2.0, b[0]), "i")

    got = f(x, y)
    for value, shards in zip(got, (x, y, x * 2.0, y[:, 0]), strict=True):
        in_rank_order = shards[0].copy()
        for shard in shards[1:]:
            in_rank_order += shard
        assert np.asarray(value).dtype == in_rank_order.dtype
        np.testing.assert_array_equal(np.asarray(value),
                                      np.broadcast_to(in_rank_order, shards.shape))


def _in_rank_order(shards):
    total = shards[0].copy()
    for shard in shards[1:]:
        total += shard
    return total


def test_large_psum_results_outlive_later_collectives_and_loops_past_the_arena():
    """A large reduction's result is a view of the call's result arena: it stays valid
    while later collectives reuse the slots, and a psum in a loop (run more often than the
    arena has room for) falls back to the slots; every result has the group-order bits."""
    from numbax._src.parallel import collectives

    n = collectives.CHUNKED_REDUCE_BYTES // 4 + 5
    x = RNG.normal(size=(N, n)).astype(np.float32)

    @partial(numbax.pmap, axis_name="i")
    def f(v):
        s = lax.psum(v, "i")
        later = lax.pmax(v * 3.0, "i")  # reuses the slots while `s` is alive
        looped = lax.fori_loop(0, 3, lambda k, c: lax.psum(c, "i") * 0.5, v)
        return s, later, looped, s[:7]

    s, later, looped, head = f(x)
    want = _in_rank_order(x)
    np.testing.assert_array_equal(s, np.broadcast_to(want, x.shape))
    np.testing.assert_array_equal(head, np.broadcast_to(want[:7], (N, 7)))
    np.testing.assert_array_equal(later, np.broadcast_to((x * 3.0).max(0), x.shape))
    c = x
    for _ in range(3):
        c = np.broadcast_to(_in_rank_order(c) * np.float32(0.5), x.shape)
    np.testing.assert_array_equal(looped, c)


def test_all_gather_ppermute_psum_scatter_against_numpy():
    x = RNG.normal(size=(N, 2, 4))

    @partial(numbax.pmap, axis_name="i")
    def f(v):
        perm = [(j, (j + 1) % N) for j in range(N)]
        return (lax.all_gather(v, "i"), lax.all_gather(v, "i", axis=1, tiled=True),
                lax.ppermute(v, "i", perm), lax.ppermute(v, "i", [(0, 2)]),
                lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
                lax.psum_scatter(jnp.stack([v] * N), "i"))

    g, gt, rot, one, sc, sc1 = f(x)
    np.testing.assert_array_equal(g, np.broadcast_to(x, (N, *x.shape)))
    np.testing.assert_array_equal(gt, np.broadcast_to(np.concatenate(list(x), 1), (N, 2, 4 * N)))
    np.testing.assert_array_equal(rot, np.roll(x, 1, axis=0))
    expected_one = np.zeros_like(x)
    expected_one[2] = x[0]
    np.testing.assert_array_equal(one, expected_one)
    np.testing.assert_allclose(sc, np.stack([x.sum(0)[:, k:k + 1] for k in range(N)]))
    np.testing.assert_allclose(sc1, np.broadcast_to(x.sum(0), x.shape))


def test_pmap_agrees_with_vmap_including_grad_through_collectives():
    x = RNG.normal(size=(N, 3))

    def per_device(v):
        loss = lambda u: lax.psum(jnp.sum(u ** 2), "i") + jnp.sum(  # noqa: E731
            lax.ppermute(u, "i", [(j, (j + 1) % N) for j in range(N)]) * u)
        return numbax.grad(loss)(v), lax.all_gather(v * 2, "i").sum(0)

    p_out = numbax.pmap(per_device, axis_name="i")(x)
    v_out = numbax.vmap(per_device, axis_name="i")(x)
    for a, b in zip(p_out, v_out):
        np.testing.assert_allclose(a, b)


def test_data_parallel_sgd_step_matches_single_device():
    w = RNG.normal(size=(3,))
    xs = RNG.normal(size=(8, 3))
    ys = xs @ np.array([1.0, -2.0, 0.5]) + 0.1

    def loss(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    @partial(numbax.pmap, axis_name="batch", in_axes=(None, 0, 0))
    def step(w, x, y):
        grads = lax.pmean(numbax.grad(loss)(w, x, y), "batch")
        return w - 0.1 * grads

    new_w = step(w, xs.reshape(N, 2, 3), ys.reshape(N, 2))
    expected = w - 0.1 * (2 / 8) * xs.T @ (xs @ w - ys)  # the closed-form gradient
    np.testing.assert_allclose(new_w, np.broadcast_to(expected, (N, 3)), rtol=1e-12)
    single = np.asarray(w - 0.1 * numbax.grad(loss)(w, xs, ys))
    np.testing.assert_allclose(new_w[0], single, rtol=1e-12)


def test_pmap_under_grad_and_jit_through_shard_map_rules():
    """pmap is shard_map: grad differentiates it with shard_map's rules (the forward and the
    transposed bodies run in the workers), and jit calls it from the compiled program."""
    x = RNG.normal(size=(N,))
    f = numbax.pmap(lambda v: lax.psum(v ** 2, "i"), axis_name="i")
    g = numbax.grad(lambda v: f(v).sum())(x)
    np.testing.assert_allclose(g, 2 * x * N)
    np.testing.assert_allclose(numbax.jit(f)(x), np.full(N, (x ** 2).sum()))


def test_pmap_compiled_with_jit_in_workers():
    x = RNG.normal(size=(N, 16))
    with numbax.disable_jit(False):
        out = numbax.pmap(lambda v: jnp.tanh(v) * 3.0 + 1.0)(x)
    np.testing.assert_allclose(out, np.tanh(x) * 3.0 + 1.0)


# ----------------------------------------------------------------------------- errors


def test_collectives_compiled_in_workers():
    x = RNG.normal(size=(N, 8))
    with numbax.disable_jit(False):
        f = numbax.pmap(lambda v: v / lax.psum(v, "i") + lax.pmax(v, "i")
                        + lax.axis_index("i"), axis_name="i")
        out = np.asarray(f(x))
        g = numbax.pmap(lambda v: lax.all_gather(v, "i", tiled=True), axis_name="i")
        gathered = np.asarray(g(x))
    np.testing.assert_allclose(out, x / x.sum(0) + x.max(0) + np.arange(N)[:, None])
    np.testing.assert_allclose(gathered, np.broadcast_to(x.reshape(-1), (N, N * 8)))


def test_bfloat16_shards_and_psum_match_one_process():
    """bfloat16 operands travel to the workers as bfloat16 (not raw bytes); compiled, the
    psum adds the shards in float32 and rounds once, as every compiled bfloat16 equation."""
    x = jnp.asarray(RNG.normal(size=(N, 6)), jnp.bfloat16)
    with numbax.disable_jit(False):
        out = numbax.pmap(lambda v: lax.psum(v * 1.5, "i"), axis_name="i")(x)
    scaled = np.asarray(x * 1.5).astype(np.float32)
    want = scaled[0]
    for row in scaled[1:]:
        want = want + row  # float32, in device order
    assert out.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(out).view(np.uint16),
                                  np.broadcast_to(want.astype(jnp.bfloat16), (N, 6)).view(
                                      np.uint16))


def test_random_under_pmap_matches_per_key_draws():
    from numbax import random

    keys = random.split(random.PRNGKey(0), N)
    out = np.asarray(numbax.pmap(lambda k: random.normal(k, (5,)))(keys))
    want = np.stack([np.asarray(random.normal(k, (5,))) for k in keys])
    np.testing.assert_array_equal(out, want)


def test_too_many_shards_names_both_numbers():
    with pytest.raises(ValueError, match=r"size 6.*at most 4"):
        numbax.pmap(lambda v: v)(np.ones((6, 2)))


def test_bad_inputs():
    with pytest.raises(NameError, match="unbound axis name: 'j'"):
        numbax.pmap(lambda v: lax.psum(v, "j"), axis_name="i")(np.ones((2, 2)))
    with pytest.raises(ValueError, match="equal sizes"):
        numbax.pmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(TypeError, match="not a valid array type"):
        numbax.pmap(lambda a: a)("text")
    with pytest.raises(ValueError, match="backend"):
        numbax.pmap(lambda a: a, backend="tpu")
    with pytest.raises(ValueError, match="perm"):
        numbax.pmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]), axis_name="i")(
            np.ones((2, 2)))


_unknown_in_workers = Primitive("test_pmap_only_in_parent")
numbax._src.core.abstract_eval_rules[_unknown_in_workers] = lambda x: [x]


def test_worker_exception_comes_back_with_device_id():
    with pytest.raises(KeyError, match=r"CpuDevice\(id=0\) raised"):
        numbax.pmap(lambda v: _unknown_in_workers.bind(v))(np.ones((2, 2)))
    np.testing.assert_allclose(numbax.pmap(lambda v: v + 1)(np.zeros((2, 1))), np.ones((2, 1)))


def test_killed_worker_raises_runtime_error_then_pool_restarts():
    f = numbax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    x = np.ones((N, 2))
    f(x)
    victim = pool._POOL.worker(2).proc
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=5)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"CpuDevice\(id=2\) died"):
        f(x)
    assert time.monotonic() - start < 10
    np.testing.assert_allclose(f(x), np.full((N, 2), N))


def test_no_shared_memory_left_behind_at_exit():
    script = textwrap.dedent("""
        import os, numpy as np, numbax
        from numbax import lax
        f = numbax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
        with numbax.disable_jit():
            print(float(f(np.ones((4, 1000)))[0, 0]), os.getpid())
            kept = numbax.device_put(np.ones(8), numbax.NamedSharding(
                numbax.make_mesh((4,), ("i",)), numbax.P("i")))
            f(kept.reshape(4, 2))  # a sharded array in shared memory, alive at exit
    """)
    env = dict(os.environ, NUMBAX_NUM_CPU_DEVICES="4")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=120, cwd=os.path.dirname(os.path.dirname(
                                os.path.abspath(__file__))))
    assert result.returncode == 0, result.stderr
    value, pid = result.stdout.split()
    assert value == "4.0"
    assert "leaked" not in result.stderr
    # the child's segments are named by its pid (other test processes make their own)
    leaked = [n for n in os.listdir("/dev/shm") if n.startswith(f"psm_numbax_{pid}_")]
    assert not leaked
