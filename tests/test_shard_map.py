"""shard_map against JAX 0.10.2's recorded results (tests/sharding_cases.py): every collective
under jit and grad on a 1-d mesh of 4 devices, a 2x2 mesh, vmap/jvp of shard_map and grad
inside it; the bodies run in the worker processes. Most cases run with jit disabled (the
workers evaluate eagerly: no Numba compiles); test_compiled_* run the compiled path."""
import json
import os
import sys

import numpy as np
import pytest

import numbax
import numbax.experimental.shard_map  # noqa: F401  (jx.experimental.shard_map in the cases)
import numbax.numpy as jnp
from numbax import lax
from numbax._src.config import config
from numbax._src.parallel import pool
from numbax.sharding import PartitionSpec as P

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import sharding_cases  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "sharding_jax_reference.json")) as _f:
    REF = json.load(_f)["results"]


@pytest.fixture(scope="module", autouse=True)
def eight_devices():
    previous = config.num_cpu_devices
    config.update("num_cpu_devices", 8)
    yield
    pool.shutdown_pool()
    config.update("num_cpu_devices", previous)


def _close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=rtol, atol=atol)


def _blocks(x, n):
    return np.asarray(x).reshape(n, -1, *np.asarray(x).shape[1:])


def _no_jax_reference(name, x):
    """Values for the rows JAX cannot compute (pmax/pmin have no derivative in JAX 0.10,
    pbroadcast has no CPU lowering): numpy over the blocks."""
    b = _blocks(x, 4)
    if name == "pmax":
        return np.sin(b).max(0)
    if name == "pmin":
        return np.cos(b).min(0)
    return np.broadcast_to((b * b)[2], b.shape).reshape(x.shape)


def test_every_collective_values_and_grads_against_jax():
    x = (np.arange(8 * 4, dtype=np.float32).reshape(8, 4) - 10) / 7
    progs, n = sharding_cases._collective_programs(numbax)
    mesh = sharding_cases._auto(numbax, (n,), ("i",))
    with numbax.disable_jit():
        for name, (body, out_spec) in progs.items():
            for check, want in zip((True, False), REF["shard_map/collectives"][name],
                                   strict=True):
                f = numbax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=out_spec,
                                     check_vma=check)
                if isinstance(want[0], str):  # JAX raised
                    kind = want[0]
                    if kind == "ValueError" and name != "pcast":  # the replication check
                        with pytest.raises(ValueError, match="require replication"):
                            f(x)
                    elif kind == "NotImplementedError":
                        _close(f(x), _no_jax_reference(name, x))
                    continue
                _close(f(x), want[0])
                _close(numbax.jit(f)(x), want[1])
                _close(numbax.grad(lambda v, f=f: jnp.sum(jnp.sin(f(v))))(x), want[2],
                       rtol=1e-5, atol=1e-5)
                _close(numbax.grad(lambda v, f=f: jnp.sum(f(v) ** 2))(x), want[3], rtol=1e-5,
                       atol=1e-5)


def test_mesh_2d_and_transforms_against_jax():
    with numbax.disable_jit():
        got = json.loads(json.dumps(sharding_cases.CASES["shard_map/mesh_2d"](numbax)))
        want = REF["shard_map/mesh_2d"]
        for i in (0, 1, 4):
            _close(got[i], want[i])
        for g, w in zip(got[2], want[2], strict=True):
            _close(g, w)
        assert got[3] == want[3]
        for g, w in zip(got[5] + got[6], want[5] + want[6], strict=True):
            _close(g, w, rtol=1e-6)
        got = sharding_cases.CASES["shard_map/transforms"](numbax)
        want = REF["shard_map/transforms"]
        for g, w in zip(got, want, strict=True):
            _close(g, w, rtol=1e-6)


def test_grad_inside_the_body_with_and_without_check_vma_against_jax():
    """check_vma=True: a replicated argument's gradient is summed over the devices and a
    replicated output counts once (JAX's varying/invariant types); check_vma=False: each
    device's program on its own."""
    with numbax.disable_jit(), numbax.enable_x64(False):
        got = json.loads(json.dumps(sharding_cases.CASES["shard_map/grad_inside"](numbax)))
    for g, w in zip(got, REF["shard_map/grad_inside"], strict=True):
        for a, b in zip(g, w, strict=True):
            _close(a, b)


def test_partial_manual_axes_against_jax():
    with numbax.disable_jit(), numbax.enable_x64(False):
        got = json.loads(json.dumps(sharding_cases.CASES["shard_map/partial_manual"](numbax)))
    want = REF["shard_map/partial_manual"]
    _close(got[0], want[0])
    _close(got[2], want[2])
    assert [got[1], got[3]] == [want[1], want[3]]


def test_compiled_bodies_with_collectives_under_jit_and_grad():
    """jit(shard_map) compiles the body in the workers (the driver calls shard_map's
    implementation); jit(grad(...)) compiles the forward and the transposed bodies."""
    x = (np.arange(8 * 4, dtype=np.float32).reshape(8, 4) - 10) / 7
    progs, n = sharding_cases._collective_programs(numbax)
    mesh = sharding_cases._auto(numbax, (n,), ("i",))
    for name in ("psum", "all_gather_tiled", "ppermute"):
        body, out_spec = progs[name]
        want = REF["shard_map/collectives"][name][1]  # check_vma=False
        f = numbax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=out_spec,
                             check_vma=False)
        _close(numbax.jit(f)(x), want[1])
        _close(numbax.jit(numbax.grad(lambda v, f=f: jnp.sum(f(v) ** 2)))(x), want[3],
               rtol=1e-5, atol=1e-5)


def test_bodies_run_here_compiled_against_jax(monkeypatch):
    """A body that cannot be sent to the workers runs in this process, vmapped over the mesh
    axes and compiled: the same values and gradients as JAX's recorded ones, with a
    replicated argument next to a split one (mapped only where it is split)."""
    from numbax._src.parallel import shard_map as sm
    monkeypatch.setattr(sm, "_program", lambda jaxpr, api: None)
    x = (np.arange(8 * 4, dtype=np.float32).reshape(8, 4) - 10) / 7
    progs, n = sharding_cases._collective_programs(numbax)
    mesh = sharding_cases._auto(numbax, (n,), ("i",))
    for name in ("psum", "pmean", "all_gather_tiled", "psum_scatter", "ppermute", "axis_index"):
        body, out_spec = progs[name]
        want = REF["shard_map/collectives"][name][1]  # check_vma=False
        f = numbax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=out_spec,
                             check_vma=False)
        _close(f(x), want[0])
        _close(numbax.jit(f)(x), want[1])
        _close(numbax.jit(numbax.grad(lambda v, f=f: jnp.sum(f(v) ** 2)))(x), want[3],
               rtol=1e-5, atol=1e-5)
    w = np.linspace(-1, 1, 4 * 3, dtype=np.float32).reshape(4, 3)
    g = numbax.jit(numbax.shard_map(lambda w, b: lax.psum(jnp.tanh(b @ w), "i"), mesh=mesh,
                                    in_specs=(P(), P("i")), out_specs=P()))
    _close(g(w, x), np.tanh(x @ w).reshape(4, 2, 3).sum(0), rtol=1e-5, atol=1e-5)


def test_bodies_run_here_on_a_2d_mesh_match_the_workers(monkeypatch):
    """On a 2x2 mesh, with arguments split over one axis, the other, or neither, and
    collectives over each axis: the body run here (compiled) gives the workers' results."""
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))

    def body(a, b, c):
        return lax.psum(a @ b, "y") * c + lax.axis_index("x"), lax.pmean(b, "x")

    specs = dict(mesh=mesh, in_specs=(P("x"), P(None, "y"), P()),
                 out_specs=(P("x"), P(None, "y")))
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((6, 4)).astype(np.float32)
    c = np.float32(1.5)
    in_workers = numbax.jit(numbax.shard_map(body, **specs))(a, b, c)
    from numbax._src.parallel import shard_map as sm
    monkeypatch.setattr(sm, "_program", lambda jaxpr, api: None)
    here = numbax.jit(numbax.shard_map(body, **specs))(a, b, c)
    for got, want in zip(here, in_workers, strict=True):
        _close(got, want, rtol=1e-5, atol=1e-6)
    # and against numpy: each x row block of a times b's two y column blocks, summed over y,
    # times c, plus the block's x index
    want = np.concatenate([(a[2 * x:2 * x + 2] @ b[:, :2] + a[2 * x:2 * x + 2] @ b[:, 2:]) * c + x
                           for x in range(2)])
    _close(here[0], want, rtol=1e-5, atol=1e-5)
    _close(here[1], b, rtol=1e-6, atol=1e-6)  # b is the same on both x devices: its mean


def test_one_device_mesh_under_jit_matches_the_plain_step():
    """On a one-device mesh the body runs here, compiled: a training step's parameters equal
    the step written without shard_map."""
    mesh = numbax.make_mesh((1,), ("b",), axis_types=(numbax.sharding.AxisType.Auto,))
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    x = rng.standard_normal((6, 5)).astype(np.float32)

    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    def step(w, x):
        return w - 0.1 * lax.pmean(numbax.grad(loss)(w, x), "b")

    sharded = numbax.jit(numbax.shard_map(step, mesh=mesh, in_specs=(P(), P("b")),
                                          out_specs=P()))
    plain = numbax.jit(lambda w, x: w - 0.1 * numbax.grad(loss)(w, x))
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(sharded(w, x)), np.asarray(plain(w, x)),
                                   rtol=1e-6, atol=1e-7)


def test_results_carry_the_out_specs_sharding_and_blocks_run_per_device():
    mesh = sharding_cases._auto(numbax, (4,), ("i",))
    seen = []

    def body(b):
        seen.append(b.shape)
        return b + lax.axis_index("i")

    with numbax.disable_jit():
        out = numbax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(np.zeros(8))
    assert seen == [(2,)]  # traced once, at the block shape
    np.testing.assert_array_equal(out, np.repeat(np.arange(4.0), 2))
    assert out.sharding == numbax.NamedSharding(mesh, P("i"))
    assert [s.device.id for s in out.addressable_shards] == [0, 1, 2, 3]
    np.testing.assert_array_equal(out.addressable_shards[3].data, [3.0, 3.0])


def test_decorator_form_old_signature_and_infer():
    mesh = sharding_cases._auto(numbax, (4,), ("i",))
    from numbax.experimental.shard_map import shard_map as old

    @numbax.shard_map(mesh=mesh, in_specs=P("i"), out_specs=P())
    def total(b):
        return lax.psum(b.sum(), "i")

    with numbax.disable_jit():
        assert float(total(np.arange(8.0))) == 28.0
        assert float(old(lambda b: lax.psum(b.sum(), "i"), mesh, P("i"), P())(
            np.arange(8.0))) == 28.0
        x = numbax.device_put(np.arange(8.0), numbax.NamedSharding(mesh, P("i")))
        inferred = numbax.shard_map(lambda b: b * 2, mesh=mesh, out_specs=P("i"))(x)
    np.testing.assert_array_equal(inferred, np.arange(8.0) * 2)


def test_bad_inputs_name_the_argument():
    mesh = sharding_cases._auto(numbax, (4,), ("i",))
    with pytest.raises(ValueError, match=r"dimension 0 \(6\) is not evenly divisible"):
        numbax.shard_map(lambda b: b, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(
            np.ones(6))
    with pytest.raises(ValueError, match="Resource axis: j"):
        numbax.shard_map(lambda b: b, mesh=mesh, in_specs=P("j"), out_specs=P("i"))(
            np.ones(8))
    with pytest.raises(TypeError, match="expected PartitionSpecs"):
        numbax.shard_map(lambda b: b, mesh=mesh, in_specs=0, out_specs=P("i"))(np.ones(8))
    with pytest.raises(ValueError, match="no mesh"):
        numbax.shard_map(lambda b: b, in_specs=P("i"), out_specs=P("i"))(np.ones(8))
    with pytest.raises(ValueError, match="require replication"):
        numbax.shard_map(lambda b: b, mesh=mesh, in_specs=P("i"), out_specs=P())(np.ones(8))
    with pytest.raises(NameError, match="unbound axis name: 'k'"):
        numbax.shard_map(lambda b: lax.psum(b, "k"), mesh=mesh, in_specs=P("i"),
                         out_specs=P("i"))(np.ones(8))


def test_data_parallel_loss_closing_over_params_grad_matches_one_device():
    """JAX's shard_map notebook: a loss whose body closes over replicated params (they become
    replicated arguments), pmean'd over the batch axis; jit(grad) equals the one-device grad."""
    rng = np.random.default_rng(0)
    sizes = [16, 8, 4]
    params = [(rng.normal(size=(a, b)) / np.sqrt(a), rng.normal(size=(b,)) * 0.1)
              for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
    batch = (rng.normal(size=(32, 16)), rng.normal(size=(32, 4)))

    def predict(params, x):
        (w1, b1), (w2, b2) = params
        return jnp.tanh(x @ w1 + b1) @ w2 + b2

    def loss(params, batch):
        inputs, targets = batch
        return jnp.mean(jnp.sum((predict(params, inputs) - targets) ** 2, axis=-1))

    mesh = numbax.sharding.Mesh(np.array(numbax.devices()[:4]), axis_names=["batch"])
    batch_s = numbax.device_put(batch, numbax.NamedSharding(mesh, P("batch")))

    def loss_dp(params, batch):
        def loss_spmd(local_batch):
            inputs, targets = local_batch
            local = jnp.mean(jnp.sum((predict(params, inputs) - targets) ** 2, axis=-1))
            return lax.pmean(local, "batch")

        return numbax.shard_map(loss_spmd, mesh=mesh, in_specs=P("batch", None),
                                out_specs=P())(batch)

    want = numbax.jit(numbax.grad(loss))(params, batch)
    got = numbax.jit(numbax.grad(loss_dp))(params, batch_s)
    for g, w in zip(numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want),
                    strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_independent_psums_are_fused_into_one_exchange():
    """A pmean of a pytree psums each leaf; the engine runs the program's independent psums
    as one psum_many (one round of barriers), with the same results."""
    from numbax._src.parallel import collectives

    mesh = sharding_cases._auto(numbax, (4,), ("i",))
    tree = {"a": np.arange(8.0), "b": np.arange(12.0).reshape(4, 3), "n": np.arange(4)}

    def body(t):
        m = lax.pmean(t, "i")
        return jax_tree_map(lambda v: v * 2, m), lax.psum(m["a"] * m["b"][:, 0].sum(), "i")

    f = numbax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=(P(), P()))
    jaxpr = numbax.make_jaxpr(f)(tree).eqns[0].params["jaxpr"].jaxpr
    fused = collectives.fuse_psums(jaxpr)
    names = [e.primitive.name for e in fused.eqns if e.primitive.name.startswith("psum")]
    assert names == ["psum_many", "psum"]  # the second psum depends on the first ones
    with numbax.disable_jit():
        out, total = f(tree)
    blocks = {k: np.asarray(v).reshape(4, -1, *np.asarray(v).shape[1:]) for k, v in
              tree.items()}
    want = {k: b.mean(0) * 2 for k, b in blocks.items()}
    for k in tree:
        np.testing.assert_allclose(out[k], want[k])
    np.testing.assert_allclose(total, 4 * (want["a"] / 2) * (want["b"][:, 0] / 2).sum())


def jax_tree_map(fn, tree):
    return numbax.tree_util.tree_map(fn, tree)


def test_compiled_large_psums_over_each_axis_of_a_2d_mesh_bit_for_bit():
    """Large psums over either axis of a 2x4 mesh (several groups, each with its own place in
    the result arena) and over both: every device gets the group-order bits; a compiled loop
    carrying a result and a psum_scatter of one leave the arena's copy alone."""
    from numbax._src.parallel import collectives

    n = collectives.CHUNKED_REDUCE_BYTES // 4 + 4
    g = np.random.default_rng(1).normal(size=(2, 4 * n)).astype(np.float32)
    mesh = sharding_cases._auto(numbax, (2, 4), ("x", "y"))

    def body(b):
        over_y, over_x, both = lax.psum(b, "y"), lax.psum(b, "x"), lax.psum(b, ("x", "y"))
        bumped = lax.fori_loop(0, 2, lambda k, c: c + 1.0, over_y)
        part = lax.psum_scatter(b.reshape(4, -1), "y", tiled=True)
        return over_y, over_x, both, bumped, part

    f = numbax.jit(numbax.shard_map(
        body, mesh=mesh, in_specs=P("x", "y"), out_specs=(
            P("x"), P(None, "y"), P(), P("x"), P("x", "y")), check_vma=False))
    over_y, over_x, both, bumped, part = (np.asarray(v) for v in f(g))
    blocks = g.reshape(2, 4, n)  # [x, y] -> the block of device (x, y)
    want_y = np.stack([_rank_order(blocks[i]) for i in range(2)])
    want_x = np.concatenate([_rank_order(blocks[:, j]) for j in range(4)])[None]
    np.testing.assert_array_equal(over_y, want_y)
    np.testing.assert_array_equal(over_x, want_x)
    np.testing.assert_array_equal(both, _rank_order(blocks.reshape(8, n))[None])
    np.testing.assert_array_equal(bumped, want_y + np.float32(1.0) + np.float32(1.0))
    np.testing.assert_array_equal(part, want_y)  # device (x, y) holds y's quarter of it


def test_large_psum_operands_in_place_or_staged_bit_for_bit():
    """A large psum reads an operand that lies in shared memory (an input block, a view of
    one at an odd offset and length, an int32 input, an earlier psum's result) where it lies,
    and stages the others (a strided view, a computed value) in its slot: all mixed in one
    group, every device gets the group-order bits."""
    from numbax._src.parallel import collectives

    n = collectives.CHUNKED_REDUCE_BYTES // 2 + 3
    rng = np.random.default_rng(2)
    g = rng.normal(size=(2, 4 * n)).astype(np.float32)
    k = rng.integers(-2**30, 2**30, size=(2, 4 * n)).astype(np.int32)
    mesh = sharding_cases._auto(numbax, (2, 4), ("x", "y"))

    def body(b, i):
        odd = lax.cond(lax.axis_index("y") % 2 == 0, lambda: b[:, 1:] * 1.0, lambda: b[:, 1:])
        return (lax.psum(odd, "y"), lax.psum(b[:, ::2], "x"), lax.psum(i, "x"),
                lax.psum(lax.psum(b, ("x", "y")), "y"))

    f = numbax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("x", "y")),
                         out_specs=(P("x"), P(None, "y"), P(None, "y"), P()), check_vma=False)
    with numbax.disable_jit():
        odd, strided, ints, twice = (np.asarray(v) for v in f(g, k))
    blocks, iblocks = g.reshape(2, 4, n), k.reshape(2, 4, n)
    np.testing.assert_array_equal(odd, np.stack([_rank_order(blocks[i, :, 1:])
                                                 for i in range(2)]))
    np.testing.assert_array_equal(strided, np.concatenate(
        [_rank_order(blocks[:, j, ::2]) for j in range(4)])[None])
    np.testing.assert_array_equal(ints, np.concatenate(
        [_rank_order(iblocks[:, j]) for j in range(4)])[None])
    np.testing.assert_array_equal(twice, _rank_order(
        [_rank_order(blocks.reshape(8, n))] * 4)[None])


def test_a_replicated_large_psum_result_comes_back_without_a_copy_and_stays():
    """A replicated output that is a large psum's result is the call's result arena itself
    (no copy into an output block): it keeps its value through later calls, and passed back
    in it is read where it lies."""
    from numbax._src.parallel import collectives, shm

    n = collectives.CHUNKED_REDUCE_BYTES // 4 + 4
    mesh = sharding_cases._auto(numbax, (4,), ("i",))
    f, again = (numbax.shard_map(lambda b: lax.psum(b, "i"), mesh=mesh, in_specs=spec,
                                 out_specs=P()) for spec in (P("i"), P()))
    g = np.random.default_rng(3).normal(size=(2, 4 * n)).astype(np.float32)
    with numbax.disable_jit():
        first = f(g[0])
        second = f(g[1])
        fourfold = again(first)  # every device's operand: `first`, where it lies
    assert shm.heap().home(np.asarray(first)) is not None  # it lies in the heap
    want = [_rank_order(row.reshape(4, n)) for row in g]
    np.testing.assert_array_equal(first, want[0])
    np.testing.assert_array_equal(second, want[1])
    np.testing.assert_array_equal(fourfold, _rank_order([want[0]] * 4))


def _rank_order(shards):
    total = shards[0].copy()
    for shard in shards[1:]:
        total += shard
    return total


X44 = np.arange(16.0).reshape(4, 4)


def test_smap_maps_one_axis_of_the_context_mesh():
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))
    with numbax.set_mesh(mesh):
        total = numbax.smap(lambda b: lax.psum(b, "x"), in_axes=0, out_axes=None,
                            axis_name="x")(X44)
        scaled = numbax.smap(lambda a, b: a * b.sum(), in_axes=(0, None), out_axes=0,
                             axis_name="x")(X44, np.ones(3))
    np.testing.assert_array_equal(total, X44.reshape(2, 2, 4).sum(0))
    np.testing.assert_array_equal(scaled, 3 * X44)


@pytest.mark.parametrize("compiled", [False, True])
def test_nested_shard_maps_see_the_enclosing_axis(compiled):
    """A shard_map (and smap) inside another maps over its own axis only; the enclosing
    axis keeps the enclosing device's index (each block (i, j) of the 2x2 mesh gets
    j + 10 i), and nothing starts a second set of workers."""
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))
    body = lambda b: b * lax.axis_index("y") + lax.axis_index("x") * 10  # noqa: E731
    inner = numbax.shard_map(body, mesh=mesh, in_specs=P(None, "y"), out_specs=P(None, "y"),
                             axis_names={"y"})
    outer = numbax.shard_map(inner, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                             axis_names={"x"})
    with numbax.set_mesh(mesh):
        smapped = numbax.smap(numbax.smap(body, in_axes=1, out_axes=1, axis_name="y"),
                              in_axes=0, out_axes=0, axis_name="x")
        runs = (numbax.jit(outer), numbax.jit(smapped)) if compiled else (outer, smapped)
        got = [np.asarray(f(X44)) for f in runs]
    rows, cols = np.indices((4, 4))
    want = X44 * (cols // 2) + (rows // 2) * 10
    for g in got:
        np.testing.assert_array_equal(g, want)
    if os.path.exists("/proc/self/stat"):  # no worker started workers of its own
        workers = {w.proc.pid for w in pool.get_pool(8).workers}
        assert workers and not [pid for pid in _children_of(workers)]


def _children_of(pids: set) -> list:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) in pids:
                found.append(int(entry))
    return found


def test_nested_shard_map_specs_may_not_name_the_enclosing_axis():
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))
    inner = numbax.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                             axis_names={"y"})
    outer = numbax.shard_map(inner, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                             axis_names={"x"})
    with pytest.raises(ValueError, match="enclosing shard_map already maps over"):
        outer(X44)


def test_smap_argument_errors_match_jax_classes():
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))
    with numbax.set_mesh(mesh):
        with pytest.raises(TypeError, match="in_axes was not given"):
            numbax.smap(lambda b: b, out_axes=0, axis_name="x")(X44)
        with pytest.raises(TypeError, match="axis_name"):
            numbax.smap(lambda b: b, in_axes=0, out_axes=0, axis_name=("x",))
        with pytest.raises(TypeError, match="in_axes"):
            numbax.smap(lambda b: b, in_axes=0.5, out_axes=0, axis_name="x")


def test_grad_through_nested_smaps_matches_finite_differences():
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))

    def reference(x):  # the same program written out block by block
        total = 0
        for i in range(2):
            b = x[2 * i:2 * i + 2]
            s = b[:, 0:2] + b[:, 2:4]
            inner = np.concatenate([np.sin(b[:, 2 * j:2 * j + 2]) * (j + 1) + s
                                    for j in range(2)], axis=1)
            total = total + inner * (i + 2)
        return (total ** 2).sum()

    with numbax.set_mesh(mesh):
        inner = numbax.smap(lambda b: jnp.sin(b) * (lax.axis_index("y") + 1) + lax.psum(b, "y"),
                            in_axes=1, out_axes=1, axis_name="y")
        f = numbax.smap(lambda b: lax.psum(inner(b) * (lax.axis_index("x") + 2), "x"),
                        in_axes=0, out_axes=None, axis_name="x")
        got = numbax.grad(lambda z: (f(z) ** 2).sum())(X44 / 7)
    want = np.zeros((4, 4))
    for idx in np.ndindex(4, 4):
        e = np.zeros((4, 4))
        e[idx] = 1e-6
        want[idx] = (reference(X44 / 7 + e) - reference(X44 / 7 - e)) / 2e-6
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
