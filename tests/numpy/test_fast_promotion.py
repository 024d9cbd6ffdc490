"""The promotion shortcut (operands._fast_promotion: operands of one dtype, all strong or all
weak, Python scalars that take it) gives exactly what JAX's lattice gives, and errors where
it does."""
import itertools

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.numpy import operands

DTYPES = ["bool", "int8", "uint8", "int32", "uint32", "float16", "bfloat16", "float32",
          "complex64"]
SCALARS = [1, -1, 300, 2.5, -0.0, 1e39, True, 1j]


def _array(dtype, weak):
    values = np.array([0, 1, 3], np.float32).astype(jnp.dtype(dtype))
    a = jnp.asarray(values)
    return numbax.lax.convert_element_type(a, a.dtype, weak_type=True) if weak else a


def _outcome(fn):
    try:
        return [(np.asarray(r).dtype, getattr(r, "weak_type", None), np.asarray(r).tobytes())
                for r in fn()]
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e)


@pytest.mark.parametrize("dtype,weak,x64", itertools.product(DTYPES, [False, True],
                                                             [True, False]))
def test_shortcut_equals_the_lattice(dtype, weak, x64, monkeypatch):
    with numbax.enable_x64(x64):
        _compare_paths(dtype, weak, monkeypatch)


def _compare_paths(dtype, weak, monkeypatch):
    x, y = _array(dtype, weak), _array(dtype, False)
    operand_lists = [(x, y), (x, x), (x, x, y)] + [(x, s) for s in SCALARS] + \
        [(s, x) for s in SCALARS] + [(x, s, y) for s in SCALARS] + [(x, s, x) for s in SCALARS]
    for args in operand_lists:
        for promote in (operands.promote_dtypes, operands.promote_dtypes_inexact):
            fast = _outcome(lambda: promote("f", *args))  # noqa: B023 (called at once)
            with monkeypatch.context() as m:
                m.setattr(operands, "_fast_promotion", lambda args: None)
                m.setattr(operands, "_one_dtype", lambda args: None)
                lattice = _outcome(lambda: promote("f", *args))  # noqa: B023
            assert fast == lattice, (promote.__name__, args)


def test_the_shortcut_is_taken_for_the_common_cases():
    f32 = jnp.ones(3, jnp.float32)
    assert operands._fast_promotion((f32, f32)) is not None
    assert operands._fast_promotion((f32, 0.5)) is not None
    assert operands._fast_promotion((jnp.ones(3, jnp.int32), 2)) is not None
    assert operands._fast_promotion((jnp.ones(3, jnp.int32), 2.5)) is None  # int and float
    assert operands._fast_promotion((f32, jnp.ones(3, jnp.float16))) is None
    counter = jnp.asarray(3)  # weak, the default int
    assert operands._fast_promotion((counter, 1)) is not None
    assert operands._fast_promotion((counter, 1.5)) is None
    assert operands._fast_promotion((counter, jnp.ones((), counter.dtype))) is None  # weak, strong
