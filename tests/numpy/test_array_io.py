"""jnp's printing, file and buffer functions: round trips through numpy's formats."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError


def test_save_load_round_trip(tmp_path):
    x = jnp.arange(6.0).reshape(2, 3)
    path = tmp_path / "x.npy"
    jnp.save(path, x)
    back = jnp.load(path)
    assert isinstance(back, numbax.Array)
    np.testing.assert_array_equal(back, np.arange(6.0).reshape(2, 3))
    jnp.savez(tmp_path / "both.npz", a=x, b=jnp.ones(2, int))
    with jnp.load(tmp_path / "both.npz") as archive:
        np.testing.assert_array_equal(archive["b"], np.ones(2, int))


def test_buffers_and_strings():
    raw = np.arange(5, dtype=np.int16).tobytes()
    got = jnp.frombuffer(raw, dtype=np.int16, count=3, offset=2)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, [1, 2, 3])
    np.testing.assert_array_equal(jnp.fromstring("1.5, 2, 3", sep=","), [1.5, 2.0, 3.0])
    np.testing.assert_array_equal(jnp.from_dlpack(np.arange(3)), [0, 1, 2])


def test_printing_uses_numpys_options():
    x = jnp.asarray([1.0 / 3.0, 2.0])
    assert jnp.array_str(x, precision=2) == "[0.33 2.  ]"
    assert jnp.array_repr(x, precision=3) == "array([0.333, 2.   ])"
    old = jnp.get_printoptions()["precision"]
    with jnp.printoptions(precision=2):
        assert repr(x) == "Array([0.33, 2.  ], dtype=float64)"
    assert jnp.get_printoptions()["precision"] == old
    jnp.set_printoptions(precision=old)


def test_io_bad_inputs():
    with pytest.raises(NotImplementedError, match="side effect"):
        jnp.fromfile("x.bin")
    with pytest.raises(NotImplementedError, match="side effect"):
        jnp.fromiter(range(3), int)
    with pytest.raises(NumbaxTypeError, match="expected str"):
        jnp.fromstring(b"1 2", sep=" ")
    with pytest.raises(NumbaxTypeError, match="__dlpack__"):
        jnp.from_dlpack([1, 2])
    with pytest.raises(TypeError):
        jnp.frombuffer(b"\x00" * 8, dtype=object)
