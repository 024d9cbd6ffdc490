"""Small eager calls of library functions run as straight-line numpy programs from their second
call with a signature (eager_programs.py): each call must give the op-by-op call's bits, dtype
and weak type, raise its errors, not alias the caller's numpy arrays, and fall back where the
function cannot be traced or evaluated."""
import ml_dtypes
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax, nn, random
from numbax._src import eager_compile, eager_programs
from numbax._src.eager_compile import compiled_when_eager
from numbax.scipy.special import logsumexp

M = np.linspace(-3, 5, 48, dtype=np.float32).reshape(6, 8)

CALLS = {
    "mean": lambda m: jnp.mean(m, axis=0),
    "mean where": lambda m: jnp.mean(m, axis=1, where=m > 0),
    "var ddof": lambda m: jnp.var(m, ddof=1),
    "std keepdims": lambda m: jnp.std(m, axis=(0, 1), keepdims=True),
    "clip": lambda m: jnp.clip(m, -1, 2.5),
    "logsumexp": lambda m: logsumexp(m, axis=1),
    "logsumexp b sign": lambda m: logsumexp(m, b=-m, return_sign=True),
    "jnp logsumexp": lambda m: jnp.logaddexp(m, 1.0) + numbax.nn.logsumexp(m),
    "softmax": lambda m: nn.softmax(m, axis=-1),
    "log_softmax": lambda m: nn.log_softmax(m),
    "gelu": lambda m: nn.gelu(m, approximate=False),
    "standardize": lambda m: nn.standardize(m, axis=0),
    "normal raw key": lambda m: random.normal(random.PRNGKey(3), (5, 3)) + m[0, 0],
    "int mean": lambda m: jnp.mean(m.astype(jnp.int32), axis=0),
    "float64 var": lambda m: jnp.var(m.astype(jnp.float64)),
    "weak clip": lambda m: jnp.clip(lax.convert_element_type(jnp.asarray(m), jnp.float64, True),
                                    0, 1),
}


@pytest.fixture
def op_by_op(monkeypatch):
    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(eager_compile, "_program_cache", [])
            return fn()
    return run


def _same(a, b):
    for x, y in zip(numbax.tree.leaves(a), numbax.tree.leaves(b), strict=True):
        assert (x.dtype, x.weak_type, x.shape) == (y.dtype, y.weak_type, y.shape)
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


@pytest.mark.parametrize("name", list(CALLS))
def test_every_call_gives_the_op_by_op_bits(name, op_by_op):
    call = CALLS[name]
    for m in (jnp.asarray(M), M):  # an Array, then the caller's numpy array
        expected = op_by_op(lambda m=m: call(m))
        for _ in range(3):  # the first call op by op, then the program
            _same(call(m), expected)


def test_the_second_call_builds_a_program_and_later_calls_reuse_it():
    @compiled_when_eager(compile_large=False)
    def affine(x, scale):
        return jnp.tanh(x * scale) + 1.0

    x = jnp.asarray(M)
    affine(x, 2.0)
    cache = _cache_of(affine)
    assert list(cache.entries.values()) == [eager_programs._SEEN_ONCE]
    affine(x, 2.0)
    (program,) = cache.entries.values()
    assert isinstance(program, eager_programs._Program)
    affine(x, 2.0)
    assert next(iter(cache.entries.values())) is program
    affine(x, 3.0)  # another static value: another signature
    affine(x[:2], 2.0)  # another shape
    assert len(cache.entries) == 3


def _cache_of(fn):
    cells = [c.cell_contents for c in fn.__closure__ if isinstance(c.cell_contents, list)]
    (caches,) = [c for c in cells if c and isinstance(c[0], eager_programs.ProgramCache)]
    return caches[0]


def test_a_value_dependent_branch_stays_op_by_op():
    @compiled_when_eager(compile_large=False)
    def branchy(x):
        return x * 2 if float(x.sum()) > 0 else x - 1

    pos, neg = jnp.asarray(M + 10), jnp.asarray(M - 10)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(branchy(pos)), (M + 10) * 2)
        np.testing.assert_array_equal(np.asarray(branchy(neg)), (M - 10) - 1)
    assert set(_cache_of(branchy).entries.values()) == {eager_programs._OP_BY_OP}


def test_errors_are_raised_at_every_call():
    m = jnp.asarray(M)
    for _ in range(3):
        with pytest.raises(ValueError, match="axis"):
            jnp.mean(m, axis=5)


def test_results_do_not_alias_the_callers_numpy_array():
    @compiled_when_eager(compile_large=False)
    def same(x):
        return jnp.asarray(x)

    host = M.copy()
    outs = [same(host) for _ in range(3)]
    host[:] = 0
    for out in outs:
        np.testing.assert_array_equal(np.asarray(out), M)


def test_bfloat16_and_typed_keys_stay_op_by_op(op_by_op):
    x = jnp.asarray(M.astype(ml_dtypes.bfloat16))
    for _ in range(3):
        _same(jnp.mean(x, axis=0), op_by_op(lambda: jnp.mean(x, axis=0)))
    key = random.key(0)
    for _ in range(3):
        _same(random.normal(key, (4,)), op_by_op(lambda: random.normal(key, (4,))))


def test_under_jit_and_grad_the_function_is_traced_inline():
    m = jnp.asarray(M)
    jaxpr = numbax.make_jaxpr(lambda v: jnp.mean(v, axis=0))(m)
    assert "reduce_sum" in str(jaxpr)
    g = numbax.grad(lambda v: jnp.var(v))(m)
    np.testing.assert_allclose(np.asarray(g), 2 * (M - M.mean()) / M.size, rtol=1e-5,
                               atol=1e-6)


def test_values_are_numpys():
    m = jnp.asarray(M)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jnp.mean(m, axis=0)), M.mean(axis=0), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jnp.std(m)), M.std(), rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(jnp.clip(m, -1, 2.5)), np.clip(M, -1, 2.5))


def test_the_library_functions_run_as_programs():
    from numbax._src.nn import functions as nn_functions
    from numbax._src.numpy import lax_numpy, reductions
    from numbax._src.random import normal

    m = jnp.asarray(M)
    cases = [(reductions.mean, (m,), {"axis": 0}), (reductions.std, (m,), {}),
             (reductions.var, (m,), {"ddof": 1}), (lax_numpy.clip, (m, 0, 1), {}),
             (nn_functions.softmax, (m,), {}), (normal, (random.PRNGKey(1), (3,)), {})]
    for fn, args, kwargs in cases:
        for _ in range(2):
            fn(*args, **kwargs)
        assert any(isinstance(v, eager_programs._Program)
                   for v in _cache_of(fn).entries.values()), fn.__name__


def test_nan_checks_see_every_primitive_after_a_program_was_built():
    m = jnp.asarray(M)
    for _ in range(3):
        jnp.std(jnp.log(m + 4))  # a program for this signature
    with numbax.debug_nans(True), pytest.raises(FloatingPointError):
        jnp.std(jnp.asarray(np.full((6, 8), np.inf, np.float32)))


def test_static_values_equal_but_of_other_types_are_other_signatures(op_by_op):
    ints = jnp.arange(6)
    for bounds in [(0, 3), (0, 3), (0.0, 3.0), (0.0, 3.0), (0, 3.0), (0, 3)]:
        got = jnp.clip(ints, *bounds)
        want = op_by_op(lambda b=bounds: jnp.clip(ints, *b))
        _same(got, want)
    assert jnp.clip(ints, 0.0, 3.0).dtype == jnp.float64  # numbax's default x64
