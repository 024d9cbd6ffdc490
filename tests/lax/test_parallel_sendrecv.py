"""lax.psend / lax.precv (lax/parallel_sendrecv.py; the workers' mailbox in
parallel/collectives_p2p.py): ppermute's meaning split into a send and a receive, in
shard_map and pmap on 4 virtual devices (eagerly and under jit) and under vmap with the axis
name, with their errors.

JAX 0.10.2 lowers them on GPUs only (on CPU its shard_map fails while lowering), so the
expected values are ppermute's, computed with numpy: member d receives member s's value for
(s, d) in perm, zeros elsewhere. The jaxpr is JAX's (printed below as JAX prints it)."""
import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.sharding import Mesh
from numbax.sharding import PartitionSpec as P
from tests.virtual_devices import cpu_devices

four_devices = cpu_devices(4)

RING = [(0, 1), (1, 2), (2, 3), (3, 0)]
HALF = [(0, 2), (1, 3)]  # members 0 and 1 receive nothing: zeros


def _permuted(blocks: np.ndarray, perm) -> np.ndarray:
    out = np.zeros_like(blocks)
    for src, dst in perm:
        out[dst] = blocks[src]
    return out


def _send_receive(perm):
    def body(x):
        token = lax.psend(x, "x", perm)
        return lax.precv(token, numbax.ShapeDtypeStruct(x.shape, x.dtype), "x", perm)
    return body


def _mesh() -> Mesh:
    return Mesh(np.array(numbax.devices()[:4]), ("x",))


@pytest.mark.parametrize("perm", [RING, HALF])
@pytest.mark.parametrize("jit", [False, True])
def test_shard_map_receives_what_ppermute_would(perm, jit):
    x = np.arange(12.0).reshape(4, 3)
    f = numbax.shard_map(_send_receive(perm), mesh=_mesh(), in_specs=P("x"),
                         out_specs=P("x"))
    f = numbax.jit(f) if jit else f
    np.testing.assert_array_equal(np.asarray(f(x.reshape(12))).reshape(4, 3),
                                  _permuted(x, perm))


def test_pmap_and_vmap_with_the_axis_name():
    x = np.arange(8.0).reshape(4, 2)
    np.testing.assert_array_equal(numbax.pmap(_send_receive(RING), axis_name="x")(x),
                                  _permuted(x, RING))
    np.testing.assert_array_equal(numbax.vmap(_send_receive(HALF), axis_name="x")(x),
                                  _permuted(x, HALF))


def test_sends_are_received_in_program_order():
    """Two sends before their receives: each precv takes the earliest unmatched psend of its
    axis and perm (the SPMD mailbox), whatever token it is given."""
    def body(x):
        first = lax.psend(x, "x", RING)
        lax.psend(2.0 * x, "x", RING)
        shape = numbax.ShapeDtypeStruct(x.shape, x.dtype)
        a = lax.precv(lax.create_token(), shape, "x", RING)
        b = lax.precv(first, shape, "x", RING)
        return a - 3.0 * b
    x = np.arange(4.0) + 1.0
    f = numbax.shard_map(body, mesh=_mesh(), in_specs=P("x"), out_specs=P("x"))
    np.testing.assert_array_equal(f(x), _permuted(x, RING) - 6.0 * _permuted(x, RING))


def test_jaxpr_is_jaxs():
    f = numbax.shard_map(_send_receive(RING), mesh=_mesh(), in_specs=P("x"), out_specs=P("x"))
    text = str(numbax.make_jaxpr(f)(np.arange(8.0, dtype=np.float32)))
    # JAX 0.10.2, in the body of its shard_map (between these, JAX's varying-axes pvary):
    jax_lines = ["d:Tok = psend[axis_name=('x',) perm=((0, 1), (1, 2), (2, 3), (3, 0))] c",
                 "e:f32[2] = precv[", "axis_name=('x',)", "out_shape=float32[2]",
                 "perm=((0, 1), (1, 2), (2, 3), (3, 0))", "] d"]
    for line in jax_lines:
        assert line in text, (line, text)


def test_bad_arguments_and_differentiation():
    x = np.arange(4.0)
    vm = lambda f: numbax.vmap(f, axis_name="x")  # noqa: E731
    with pytest.raises(ValueError, match="perm has pairs"):
        vm(lambda v: lax.psend(v, "x", [(0, 1), (1, 1)]))(x)
    with pytest.raises(ValueError, match="token is not the token of a psend"):
        vm(lambda v: lax.precv(lax.create_token(), numbax.ShapeDtypeStruct((), v.dtype), "x",
                               RING))(x)
    with pytest.raises(ValueError, match="out_shape is f64\\[3\\]"):
        vm(lambda v: lax.precv(lax.psend(v, "x", RING), numbax.ShapeDtypeStruct((3,), v.dtype),
                               "x", RING))(x)
    with pytest.raises(TypeError, match="out_shape is a tuple"):
        vm(lambda v: lax.precv(lax.psend(v, "x", RING), (3,), "x", RING))(x)
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psend(x, "x", RING)
    sm = numbax.shard_map(_send_receive(RING), mesh=_mesh(), in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'psend'"):
        numbax.grad(lambda v: sm(v).sum())(x)  # as in JAX


def test_vmap_path_differentiates_as_ppermute():
    """Under the vmap naming the axis the pair is ppermute's rule, so it has its gradient
    (the permutation run backwards); module doc."""
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    f = numbax.vmap(_send_receive(HALF), axis_name="x")
    got = numbax.grad(lambda v: (f(v) * w).sum())(np.arange(4.0))
    np.testing.assert_array_equal(got, [100.0, 1000.0, 0.0, 0.0])
