"""lax.ragged_all_to_all (lax/parallel_ragged.py; the workers' exchange in
parallel/collectives_p2p.py): shard_map and pmap on 4 virtual devices, eagerly and under jit,
under vmap with the axis name (a body run in this process), an outer vmap, its gradient, and
its errors.

JAX 0.10.2 cannot run it on CPU (XLA:CPU: "HLO opcode `ragged-all-to-all` is not
supported"), and its vmap rule over the named axis raises NotImplementedError, so the
expected values are JAX's documented example (kept as literals) and a numpy loop of JAX's
documented pseudocode (`_want`)."""
import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.sharding import Mesh
from numbax.sharding import PartitionSpec as P
from tests.virtual_devices import cpu_devices

four_devices = cpu_devices(4)

# JAX's docstring example, axis of size 2: per member operand, output, input_offsets,
# send_sizes, output_offsets, recv_sizes, and the results it documents
DOC_ARGS = (np.array([[1, 2, 2], [3, 4, 0]], np.float32), np.zeros((2, 4), np.float32),
            np.array([[0, 1], [0, 1]], np.int32), np.array([[1, 2], [1, 1]], np.int32),
            np.array([[0, 0], [1, 2]], np.int32), np.array([[1, 1], [2, 1]], np.int32))
DOC_RESULT = [[1, 3, 0, 0], [2, 2, 4, 0]]


def _want(operand, output, in_off, send, out_off):
    """JAX's pseudocode: member d's output rows [out_off[s, k], +send[s, k]) take member s's
    rows [in_off[s, k], +send[s, k]) for the slices k of s that go to d."""
    n, spd = len(operand), in_off.shape[1] // len(operand)
    result = np.array(output, copy=True)
    for d in range(n):
        for s in range(n):
            for k in range(d * spd, (d + 1) * spd):
                lo, size, at = in_off[s, k], send[s, k], out_off[s, k]
                result[d, at:at + size] = operand[s, lo:lo + size]
    return result


def _ring_case(spd: int = 1, seed: int = 3):
    """Four members, 8 operand rows and 8 output rows each, random slice sizes (at most 2
    rows, or 1 with two slices per member)."""
    rng = np.random.default_rng(seed)
    k = 4 * spd
    operand = np.arange(4 * 8 * 2, dtype=np.float32).reshape(4, 8, 2)
    output = -np.ones((4, 8, 2), np.float32)
    send = rng.integers(0, 3 if spd == 1 else 2, size=(4, k)).astype(np.int32)
    in_off = np.zeros_like(send)
    for s in range(4):
        in_off[s] = np.concatenate([[0], np.cumsum(send[s])[:-1]])
    recv = np.zeros_like(send)  # recv[d, s-slices] = send[s, d-slices]
    out_off = np.zeros_like(send)
    for d in range(4):
        at = 0
        for s in range(4):
            for t in range(spd):
                recv[d, s * spd + t] = send[s, d * spd + t]
                out_off[s, d * spd + t] = at
                at += send[s, d * spd + t]
    return operand, output, in_off, send, out_off, recv


def _mesh() -> Mesh:
    return Mesh(np.array(numbax.devices()[:4]), ("x",))


def _sharded():
    body = lambda op, out, *meta: lax.ragged_all_to_all(  # noqa: E731
        op, out, *(m[0] for m in meta), axis_name="x")
    return numbax.shard_map(body, mesh=_mesh(), in_specs=(P("x"),) * 6, out_specs=P("x"))


def _flat(args):
    """Members' blocks laid end to end along axis 0, as shard_map takes them."""
    return [a.reshape(-1, *a.shape[2:]) if a.ndim > 2 else a for a in args]


def test_jax_documented_example_under_vmap_and_shard_map():
    f = numbax.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"), axis_name="i")
    np.testing.assert_array_equal(f(*DOC_ARGS), DOC_RESULT)
    np.testing.assert_array_equal(numbax.jit(f)(*DOC_ARGS), DOC_RESULT)
    mesh = Mesh(np.array(numbax.devices()[:2]), ("x",))
    g = numbax.shard_map(lambda op, out, *meta: lax.ragged_all_to_all(
        op[0], out[0], *(m[0] for m in meta), axis_name="x")[None], mesh=mesh,
        in_specs=(P("x"),) * 6, out_specs=P("x"))
    np.testing.assert_array_equal(g(*DOC_ARGS), DOC_RESULT)


@pytest.mark.parametrize("spd", [1, 2])
@pytest.mark.parametrize("jit", [False, True])
def test_shard_map_on_four_devices_matches_the_pseudocode(spd, jit):
    args = _ring_case(spd)
    want = _want(*args[:5])
    f = numbax.jit(_sharded()) if jit else _sharded()
    np.testing.assert_array_equal(np.asarray(f(*_flat(args))).reshape(4, 8, 2), want)


def test_pmap_and_vmap_with_the_axis_name_agree():
    args = _ring_case(seed=5)
    want = _want(*args[:5])
    body = lambda *a: lax.ragged_all_to_all(*a, axis_name="x")  # noqa: E731
    np.testing.assert_array_equal(numbax.pmap(body, axis_name="x")(*args), want)
    np.testing.assert_array_equal(numbax.vmap(body, axis_name="x")(*args), want)


def test_outer_vmap_matches_a_loop():
    cases = [_ring_case(seed=s) for s in (1, 2)]
    stacked = [np.stack(parts) for parts in zip(*cases)]
    body = lambda *a: lax.ragged_all_to_all(*a, axis_name="x")  # noqa: E731
    got = numbax.vmap(numbax.vmap(body, axis_name="x"))(*stacked)
    np.testing.assert_array_equal(got, np.stack([_want(*c[:5]) for c in cases]))


def test_gradient_is_the_transposed_exchange():
    """It is linear in (operand, output): the gradient of <f(a, b), w> is J^T w, with J
    read off f column by column."""
    operand, output, *meta = _ring_case(seed=7)
    f = numbax.vmap(lambda a, b, *m: lax.ragged_all_to_all(a, b, *m, axis_name="x"),
                    axis_name="x")
    w = np.arange(64, dtype=np.float32).reshape(4, 8, 2) / 10
    g_op, g_out = numbax.grad(lambda a, b: (f(a, b, *meta) * w).sum(), (0, 1))(operand, output)
    cols = np.eye(64, dtype=np.float32)
    jac = np.stack([_want(c.reshape(4, 8, 2), np.zeros_like(output), *meta[:3]).ravel()
                    for c in cols], axis=1)
    np.testing.assert_allclose(np.asarray(g_op).ravel(), jac.T @ w.ravel(), rtol=1e-6)
    kept = _want(np.zeros_like(operand), np.ones_like(output), *meta[:3])  # rows not received
    np.testing.assert_allclose(g_out, w * kept, rtol=1e-6)
    sharded = _sharded()
    g_sharded = numbax.grad(lambda a: (sharded(a, *_flat([output, *meta])) *
                                       w.reshape(32, 2)).sum())(operand.reshape(32, 2))
    np.testing.assert_allclose(np.asarray(g_sharded).ravel(), jac.T @ w.ravel(), rtol=1e-6)


def test_bad_arguments_raise_jax_classes():
    body = lambda *a, **kw: numbax.vmap(  # noqa: E731
        lambda *b: lax.ragged_all_to_all(*b, axis_name="i", **kw), axis_name="i")(*a)
    operand, output, in_off, send, out_off, recv = DOC_ARGS
    with pytest.raises(ValueError, match="input_offsets must be integer type"):
        body(operand, output, in_off.astype(np.float32), send, out_off, recv)
    with pytest.raises(ValueError, match="send_sizes must be rank 1"):
        body(operand, output, in_off, send[:, :, None], out_off, recv)
    with pytest.raises(ValueError, match="input_offsets has length 3"):
        body(operand, output, *(np.ones((2, 3), np.int32),) * 4)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        body(*DOC_ARGS, axis_index_groups=[[0, 1]])
    with pytest.raises(NameError, match="unbound axis name"):
        lax.ragged_all_to_all(*(a[0] for a in DOC_ARGS), axis_name="i")
