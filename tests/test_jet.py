"""numbax.experimental.jet (jax.experimental.jet): Taylor-mode series against JAX 0.10.2's
recorded outputs (tests/data/jet_jax_reference.json) and against repeated jvp along the same
curve, which shares no rule with jet."""
import json
import math
import pathlib
import types

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax, nn
from numbax.experimental.jet import jet, jet2
from tests.data import jet_programs

REFERENCE = json.loads(pathlib.Path(__file__).parent.joinpath(
    "data", "jet_jax_reference.json").read_text())
M = types.SimpleNamespace(jax=numbax, jnp=jnp, lax=lax, nn=nn)


def _leaves(tree):
    return [np.asarray(x) for x in numbax.tree.leaves(tree)]


def _taylor_by_jvp(fun, primals, series):
    """The derivatives 0..K of fun along the curve x(t) = x + sum_k h_k t**k / k!, at t = 0,
    by nested jvp in t: the flat output leaves per order."""
    order = len(series[0])

    def curve(t):
        args = [x + sum(h * t ** (k + 1) / math.factorial(k + 1) for k, h in enumerate(hs))
                for x, hs in zip(primals, series)]
        return numbax.tree.leaves(fun(*args))

    def derivative(g, n):
        if n == 0:
            return g
        inner = derivative(g, n - 1)
        return lambda t: numbax.jvp(inner, (t,), (1.0,))[1]

    return [[np.asarray(x) for x in derivative(curve, n)(0.0)] for n in range(order + 1)]


def _by_order(primals_out, series_out):
    """jet's outputs as the flat output leaves per order (0: the primal outputs)."""
    leaves = _leaves(primals_out)
    order_major = numbax.tree.leaves(series_out)  # per output leaf, its K terms in order
    order = len(order_major) // len(leaves)
    terms = [order_major[i * order:(i + 1) * order] for i in range(len(leaves))]
    return [leaves] + [[np.asarray(t[k]) for t in terms] for k in range(order)]


def _as_json(tree):
    """tree as JSON holds it (arrays as nested lists, tuples as lists), as JAX's was saved."""
    return json.loads(json.dumps(numbax.tree.map(lambda x: np.asarray(x).tolist(), tree)))


def _close(got, want, where="out"):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            _close(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"{where}[{i}]")
    else:
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), where


@pytest.mark.parametrize("name", sorted(jet_programs.PROGRAMS))
def test_matches_jax(name):
    fun, primals, series = jet_programs.PROGRAMS[name](M)
    primals_out, series_out = jet(fun, primals, series)
    _close(_as_json(primals_out), REFERENCE[name]["primals_out"])
    _close(_as_json(series_out), REFERENCE[name]["series_out"])


@pytest.mark.parametrize("name", sorted({**jet_programs.PROGRAMS, **jet_programs.NUMBAX_ONLY}))
def test_matches_repeated_jvp(name):
    programs = {**jet_programs.PROGRAMS, **jet_programs.NUMBAX_ONLY}
    fun, primals, series = programs[name](M)
    got = _by_order(*jet(fun, primals, series))
    want = _taylor_by_jvp(fun, primals, series)
    tol = 1e-6 if name == "conversions" else 1e-8  # float32 rounds jet's terms one by one
    for k, (g, w) in enumerate(zip(got, want)):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"order {k}")


def test_jax_has_no_rule_where_numbax_does():
    # recorded from JAX 0.10.2: KeyError naming the primitive, or a tracer leak
    assert REFERENCE["unary_jnp.tan"] == "KeyError: tan"
    assert REFERENCE["unary_nn.relu"].startswith("UnexpectedTracerError")


def test_docs_example():
    h0, h1, h2 = 0.5 ** 3.0, 3.0 * 0.5 ** 2.0, 6.0 * 0.5
    f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
    assert float(f0) == pytest.approx(np.sin(h0), rel=1e-15)
    assert float(f1) == pytest.approx(np.cos(h0) * h1, rel=1e-15)
    assert float(f2) == pytest.approx(-np.sin(h0) * h1 ** 2 + np.cos(h0) * h2, rel=1e-14)


def test_unscaled_terms_are_taylor_coefficients():
    fun, primals, series = jet_programs.PROGRAMS["order5"](M)
    unscaled = [[h / math.factorial(k + 1) for k, h in enumerate(s)] for s in series]
    _, terms = jet2(fun, primals, unscaled)
    _, scaled = jet(fun, primals, series)
    for k, (a, b) in enumerate(zip(terms, scaled)):
        np.testing.assert_allclose(a, np.asarray(b) / math.factorial(k + 1), rtol=1e-12)
    fun_terms = jet(fun, primals, series, factorial_scaled=False)[1]
    for got, want in zip(fun_terms, REFERENCE["order5"]["unscaled_series_out"]):
        np.testing.assert_allclose(got, want, rtol=1e-9)


def test_output_without_series_and_integer_conversion_have_zero_terms():
    out, (t1, t2) = jet(lambda x: (jnp.ones(2), x.astype(jnp.int32)), (np.array([1.5, 2.5]),),
                        ((np.ones(2), np.ones(2)),))
    assert [t.tolist() for t in t1] == [[0.0, 0.0], [0.0, 0.0]]
    assert [t.tolist() for t in t2] == [[0.0, 0.0], [0.0, 0.0]]
    assert t2[1].dtype.kind == "f"  # zeros_like(out) times k!, a float (as JAX's)
    # JAX converts the terms to integers instead (its jet treats the cast as linear): 1, 1


def test_composes_with_jit_vmap_and_grad():
    series = ((1.0, 0.0, 0.0),)
    third = lambda x: jet(jnp.sin, (x,), series)[1][2]  # noqa: E731  (-cos x)
    np.testing.assert_allclose(numbax.jit(third)(0.3), -np.cos(0.3), rtol=1e-14)
    np.testing.assert_allclose(numbax.vmap(third)(jet_programs.X), -np.cos(jet_programs.X),
                               rtol=1e-14)
    np.testing.assert_allclose(numbax.grad(third)(0.3), np.sin(0.3), rtol=1e-14)
    _, terms = jet(numbax.vmap(jnp.sin), (jet_programs.X,), ((np.ones(3), np.zeros(3)),))
    np.testing.assert_allclose(terms[1], -np.sin(jet_programs.X), rtol=1e-14)
    # a jit inside fun is traced through; so are checkpoint and custom_jvp functions
    _, terms = jet(numbax.jit(numbax.checkpoint(nn.relu)), (np.array([-1.0, 2.0]),),
                   ((np.ones(2),),))
    assert terms[0].tolist() == [0.0, 1.0]


def test_unsupported_primitive_names_itself():
    with pytest.raises(NotImplementedError, match="'cumlogsumexp'"):
        jet(lambda x: lax.cumlogsumexp(x), (jet_programs.X,), ((np.ones(3),),))
    with pytest.raises(NotImplementedError, match="'sort'"):
        jet(jnp.sort, (jet_programs.X,), ((np.ones(3),),))


def test_argument_errors_are_jaxs():
    with pytest.raises(ValueError, match="jet terms have inconsistent lengths"):
        jet(jnp.add, (1.0, 2.0), ((1.0,), (1.0, 2.0)))
    with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
        jet(jnp.sum, ((1.0, 2.0),), ((1.0,),))
    with pytest.raises(ValueError, match="term 0 for argument 0 is not an array"):
        jet(jnp.sin, (1.0,), (([1.0, 2.0],),))


def test_ties_and_abs_at_zero_as_jax():
    # JAX 0.10.2: ([2., 1.]), (2.) and ([-1., 3., 7.]): ties take the mean of the terms
    _, (t,) = jet(jnp.maximum, (np.array([1.0, 2.0]), np.array([1.0, 0.0])),
                  ((np.array([1.0, 1.0]),), (np.array([3.0, 5.0]),)))
    assert t.tolist() == [2.0, 1.0]
    _, (t,) = jet(jnp.max, (np.array([1.0, 1.0, 0.0]),), ((np.array([1.0, 3.0, 7.0]),),))
    assert float(t) == 2.0
    _, (t,) = jet(jnp.abs, (np.array([-1.0, 0.0, 2.0]),), ((np.array([1.0, 3.0, 7.0]),),))
    assert t.tolist() == [-1.0, 3.0, 7.0]


def test_float32_stays_float32():
    x = np.array([0.1, 0.5], np.float32)
    out, terms = jet(lambda x: jnp.tanh(x) * jnp.exp(x) / (1 + x * x), (x,),
                     ((np.ones(2, np.float32), np.zeros(2, np.float32)),))
    assert out.dtype == np.float32 and [t.dtype for t in terms] == [np.float32] * 2
