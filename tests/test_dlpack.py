"""numbax.dlpack (jax.dlpack): Arrays from DLPack producers, copied unless copy=False (a
read-only view then), JAX's supported dtypes, and clear refusals."""
import ml_dtypes
import numpy as np
import pytest

import numbax
from numbax.errors import NumbaxTypeError, NumbaxValueError


def test_a_copy_unless_asked_not_to():
    source = np.arange(4.0)
    copied = numbax.dlpack.from_dlpack(source)
    shared = numbax.dlpack.from_dlpack(source, copy=False)
    source[0] = 9.0
    np.testing.assert_array_equal(np.asarray(copied), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(shared), [9.0, 1.0, 2.0, 3.0])
    assert not np.asarray(shared).flags.writeable
    # numbax's own Arrays are producers too, and the result computes like any Array
    back = numbax.dlpack.from_dlpack(numbax.numpy.arange(3, dtype=np.int32) * 2)
    assert back.dtype == np.int32 and np.asarray(back).tolist() == [0, 2, 4]


def test_supported_dtypes_are_jaxs():
    """JAX 0.10's answers (recorded): every numeric dtype and bfloat16; not float8 or text."""
    for dtype in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                  np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64,
                  np.complex128, ml_dtypes.bfloat16):
        assert numbax.dlpack.is_supported_dtype(dtype), dtype
    for dtype in (ml_dtypes.float8_e4m3fn, np.str_, "not a dtype"):
        assert not numbax.dlpack.is_supported_dtype(dtype), dtype


def test_refusals_name_the_problem():
    with pytest.raises(NumbaxTypeError, match="type list, expected an object with __dlpack__"):
        numbax.dlpack.from_dlpack([1, 2])
    with numbax.config.override("jax_enable_x64", False):
        with pytest.raises(NumbaxValueError, match="copy=False, but the buffer's float64"):
            numbax.dlpack.from_dlpack(np.arange(3.0), copy=False)
        assert numbax.dlpack.from_dlpack(np.arange(3.0)).dtype == np.float32


def test_jax_dlpack_under_install_as_jax():
    from tests.compat.as_jax import numbax_as_jax

    with numbax_as_jax():
        import jax.dlpack

        assert jax.dlpack.from_dlpack is numbax.dlpack.from_dlpack
