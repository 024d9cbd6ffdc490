"""jax.Array's methods that numbax.Array lacked until 2026-11-30 (JAX code calling them
stopped with an AttributeError): numpy-style ones checked against numpy, runtime ones
against what JAX documents for a single-device CPU array."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp

X = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5


@pytest.mark.parametrize("target", [np.int32, np.int16, np.uint8, np.float64, np.int64])
def test_view_reinterprets_the_bits_as_numpy(target):
    for jitted in (False, True):
        f = (lambda x: x.view(target))
        got = (numbax.jit(f) if jitted else f)(jnp.asarray(X))
        np.testing.assert_array_equal(np.asarray(got), X.view(target))
    with pytest.raises(ValueError, match="whole number"):
        jnp.asarray(np.arange(3, dtype=np.int16)).view(np.float32)
    with pytest.raises(NotImplementedError, match="type"):
        jnp.asarray(X).view(np.int32, type=np.ndarray)


def test_view_of_bools_goes_through_bytes():
    b = np.array([True, False, True, True])
    np.testing.assert_array_equal(np.asarray(jnp.asarray(b).view(np.uint8)), b.view(np.uint8))
    u = np.array([0, 1, 2], np.uint8)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(u).view(bool)), u != 0)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int16, np.complex64, np.uint8])
def test_byteswap_and_tobytes_match_numpy(dtype):
    x = (np.arange(6) * 37 + 3).astype(dtype).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x).byteswap()), x.byteswap())
    np.testing.assert_array_equal(np.asarray(numbax.jit(lambda a: a.byteswap())(x)),
                                  x.byteswap())
    assert jnp.asarray(x).tobytes() == x.tobytes()
    assert jnp.asarray(x).tobytes("F") == x.tobytes("F")
    with pytest.raises(TypeError, match="inplace"):
        jnp.asarray(x).byteswap(inplace=True)


def test_numpy_style_methods_match_numpy():
    a = jnp.asarray(X)
    np.testing.assert_array_equal(np.asarray(a.diagonal()), X.diagonal())
    np.testing.assert_array_equal(np.asarray(a.diagonal(1)), X.diagonal(1))
    np.testing.assert_array_equal(np.asarray(a.ptp(axis=1)), np.ptp(X, axis=1))
    s = jnp.asarray(np.array([1.0, 2.0, 3.0]))
    assert int(s.searchsorted(2.5)) == np.searchsorted([1.0, 2.0, 3.0], 2.5)
    idx = np.array([0, 1, 0])
    choices = [np.array([1, 2, 3]), np.array([4, 5, 6])]
    np.testing.assert_array_equal(np.asarray(jnp.asarray(idx).choose(choices)),
                                  idx.choose(choices))
    v = np.array([3.0, 1.0, 2.0, 0.5])
    part = np.asarray(jnp.asarray(v).argpartition(1))
    assert sorted(v[part[:2]]) == sorted(np.sort(v)[:2]) and sorted(part) == [0, 1, 2, 3]
    with pytest.raises(NotImplementedError, match="flatten"):
        a.flat  # noqa: B018


def test_runtime_methods_of_a_cpu_array():
    a = jnp.asarray(X)
    assert a.is_ready() and a.copy_to_host_async() is None
    assert a.platform() == "cpu" and a.on_device_size_in_bytes() == X.nbytes
    assert not a.committed
    placed = numbax.device_put(a, numbax.devices()[0])
    assert placed.committed and a.to_device(numbax.devices()[0]).committed
    np.testing.assert_array_equal(np.asarray(a.addressable_data(0)), X)
    clone = a.clone()
    assert clone is not a
    np.testing.assert_array_equal(np.asarray(clone), X)
    assert a.unsafe_buffer_pointer() == np.asarray(a).ctypes.data


def test_delete_frees_the_array_and_later_uses_raise():
    a = jnp.asarray(X)
    b = a + 1
    a.delete()
    a.delete()  # a second delete is harmless, as in JAX
    assert a.is_deleted() and not b.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        a + 1
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(a)
    np.testing.assert_array_equal(np.asarray(b), X + 1)


def test_delete_of_a_gpu_array_drops_its_buffers():
    """(No GPU needed: a host array stands in for the device buffer.)"""
    from numbax._src.array import GpuArray

    created = GpuArray.created  # (making one flips eager dispatch for the process)
    try:
        g = GpuArray._from_buffer(np.zeros(3, np.float32), (3,), False, device=None)
    finally:
        GpuArray.created = created
    g.delete()
    assert g.is_deleted() and repr(g) == "Array(<deleted>)"
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(g)
    with pytest.raises(RuntimeError, match="deleted"):
        g._dbuf  # noqa: B018
