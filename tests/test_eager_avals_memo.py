"""Eager ops remember their primitives' abstract evaluation (dispatch.out_avals_of): the answer
must follow everything the rule reads (avals, params with their types, the trace context), a
refusal must be raised at every call, and results equal those of the rule asked afresh."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import core, dispatch
from numbax._src.errors import ShapeDtypeError


@pytest.fixture
def without_memo(monkeypatch):
    """Runs the wrapped calls with the rule asked at every call."""
    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(core, "avals_only", set())
            return fn()
    return run


def _same(a, b):
    assert a.dtype == b.dtype and a.weak_type == b.weak_type and a.shape == b.shape
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_repeated_ops_equal_the_rule_asked_afresh(without_memo):
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    i = jnp.asarray(3)  # weak
    cases = [lambda: x * 0.5, lambda: i + 1, lambda: jnp.tanh(x), lambda: x.sum(axis=0),
             lambda: x @ x.T, lambda: x[1], lambda: jnp.where(x > 2, x, 0),
             lambda: lax.convert_element_type(x, jnp.int8), lambda: jnp.cumsum(x, axis=1),
             lambda: x.reshape(3, 2).T, lambda: jnp.argmax(x, axis=1)]
    for case in cases:
        first, second = case(), case()
        _same(first, second)
        _same(second, without_memo(case))


def test_switching_x64_between_calls_gives_each_its_dtypes():
    wide = lax.iota(np.int64, 3)
    with numbax.enable_x64(False):
        narrow = lax.iota(np.int64, 3)
    assert (wide.dtype, narrow.dtype) == (np.int64, np.int32)
    assert lax.iota(np.int64, 3).dtype == np.int64


def test_a_params_type_is_part_of_the_key():
    # 2, 2.0 and a numpy 2 hash alike: a rule that refuses one of them must still see it
    aval = core.ShapedArray((3,), np.float32)
    dispatch._OUT_AVALS.clear()
    for y in (2, 2.0, np.int64(2), 2):
        dispatch.out_avals_of(lax.integer_pow_p, [aval], {"y": y})
    assert len(dispatch._OUT_AVALS) == 3


def test_refusals_are_raised_at_every_call():
    f32, i32 = jnp.ones(3, jnp.float32), jnp.ones(3, jnp.int32)
    for _ in range(2):
        with pytest.raises(ShapeDtypeError, match="different dtypes"):
            lax.add(f32, i32)


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(dispatch, "OUT_AVALS_SIZE", 8)
    dispatch._OUT_AVALS.clear()
    for n in range(1, 30):
        out = jnp.ones(n, jnp.float32) * 2.0
        assert out.shape == (n,) and float(out.sum()) == 2.0 * n
    assert len(dispatch._OUT_AVALS) <= 8
