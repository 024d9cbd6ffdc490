"""numbax.scipy.special against scipy and mpmath: values across the domains and tails,
float32, derivatives against finite differences, jit/vmap, and bad input."""
import mpmath as mp
import numpy as np
import pytest
import scipy.special as sp

import numbax
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.scipy import special
from numbax.test_util import check_grads

RNG = np.random.default_rng(7)
X = np.array([-9.0, -2.5, -0.7, -0.1, 0.0, 0.3, 1.4, 3.0, 7.5])
POS = np.array([0.01, 0.4, 1.0, 2.5, 7.0, 30.0])
P = np.array([1e-10, 0.01, 0.3, 0.5, 0.77, 0.999])
WIDE = np.concatenate([-np.logspace(-6, 1.4, 40), np.logspace(-6, 1.6, 60)])
LOGPOS = np.logspace(-8, 2.8, 200)


def _rel(got, want):
    got, want = np.atleast_1d(np.asarray(got, float)), np.atleast_1d(np.asarray(want, float))
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / np.abs(want)
    err[(got == want)] = 0
    return err


# (name, scipy reference, points, max relative error)
UNARY = [
    ("erf", sp.erf, X, 1e-13), ("erfc", sp.erfc, X, 1e-13), ("erfinv", sp.erfinv, P * 2 - 1, 1e-13),
    ("gammaln", sp.gammaln, POS, 1e-13), ("digamma", sp.digamma, POS, 1e-13),
    ("expit", sp.expit, X, 1e-13), ("logit", sp.logit, P, 1e-13), ("ndtr", sp.ndtr, X, 1e-13),
    ("log_ndtr", sp.log_ndtr, np.concatenate([X, [-25.0, -40.0, -300.0, 20.0]]), 1e-11),
    ("ndtri", sp.ndtri, np.concatenate([np.logspace(-300, -1, 60), P[1:], 1 - P[:3]]), 2e-15),
    ("erfcx", sp.erfcx, np.concatenate([WIDE, [1e5, 1e200]]), 1e-13),
    ("dawsn", sp.dawsn, np.concatenate([WIDE, [1e5, 1e9]]), 1e-14),
    ("gamma", sp.gamma, np.array([-3.5, -0.5, 0.5, 1.0, 4.5, 10.0, 30.5]), 1e-13),
    ("gammasgn", sp.gammasgn, np.array([-3.5, -2.5, -0.5, 0.5, 4.0]), 0),
    ("exp1", sp.exp1, LOGPOS, 1e-14), ("expi", sp.expi, np.concatenate([-LOGPOS, LOGPOS]), 3e-14),
    ("spence", sp.spence, np.concatenate([[0.0], LOGPOS]), 1e-14),
    ("i0", sp.i0, WIDE, 1e-14), ("i0e", sp.i0e, WIDE, 1e-14), ("i1", sp.i1, WIDE, 1e-14),
    ("i1e", sp.i1e, WIDE, 1e-14), ("entr", sp.entr, np.abs(WIDE), 1e-14),
    ("loggamma", sp.loggamma, POS, 1e-13),
]


@pytest.mark.parametrize("name,ref,x,rtol", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_scipy(name, ref, x, rtol):
    out = getattr(special, name)(x)
    assert out.dtype == np.float64
    err = _rel(out, ref(x))
    assert np.nanmax(err) <= rtol, (x[np.nanargmax(err)], np.nanmax(err))


@pytest.mark.parametrize("name,k", [("sici", 0), ("sici", 1), ("fresnel", 0), ("fresnel", 1)])
def test_pairs_match_scipy(name, k):
    x = np.concatenate([WIDE, [1e3, 1e5]])
    err = _rel(getattr(special, name)(x)[k], getattr(sp, name)(x)[k])
    near_root = (name == "sici") & (k == 1) & (np.abs(np.abs(x) - 3.3842) < 0.05)
    assert np.nanmax(np.where(near_root, 0, err)) < 2e-13


def test_far_tails_beat_scipy_against_mpmath():
    mp.mp.dps = 40
    # fresnel at large x: the phase pi x^2 / 2 is reduced exactly
    s, c = special.fresnel(804407.9777729542)
    assert abs(float(s) - float(mp.fresnels(804407.9777729542))) < 1e-16
    # expi just past its series/asymptotic switch
    assert _rel(special.expi(40.14217502884454), float(mp.ei(40.14217502884454))) < 1e-15
    # erfcx at large negative x: exp(x^2) without the rounding of x^2
    x = -25.459275
    assert _rel(special.erfcx(x), float(mp.exp(mp.mpf(x) ** 2) * mp.erfc(x))) < 1e-15


def test_two_and_more_arguments_match_scipy():
    a, b = np.exp(RNG.uniform(-6, 12, 300)), np.exp(RNG.uniform(-6, 12, 300))
    mp.mp.dps = 30
    ref = np.array([float(mp.log(mp.beta(x, y))) for x, y in zip(a[:40], b[:40])])
    assert np.max(np.abs(np.asarray(special.betaln(a[:40], b[:40])) - ref)
                  / np.maximum(np.abs(ref), 1)) < 1e-14
    assert np.max(_rel(special.beta(a[:40] / 1e4, b[:40] / 1e4), sp.beta(a[:40] / 1e4,
                                                                         b[:40] / 1e4))) < 1e-11
    x = RNG.uniform(0, 1, 300)
    assert np.max(_rel(special.betainc(a / 1e3, b / 1e3, x), sp.betainc(a / 1e3, b / 1e3, x))) \
        < 1e-13
    s, q = RNG.uniform(1.1, 10, 50), RNG.uniform(0.1, 10, 50)
    assert np.max(_rel(special.zeta(s, q), sp.zeta(s, q))) < 1e-13
    n, xx = RNG.integers(0, 40, 400), np.exp(RNG.uniform(-10, 5, 400))
    assert np.max(_rel(special.expn(n, xx), sp.expn(n, xx))) < 1e-14
    assert np.max(_rel(special.gammainc(a[:50] / 1e3, x[:50] * 5),
                       sp.gammainc(a[:50] / 1e3, x[:50] * 5))) < 1e-13
    z, m = np.array([3.0, 200.0, -2.5, 0.5]), np.array([2.0, 30.0, 1.5, 0.0])
    np.testing.assert_allclose(np.asarray(special.poch(z, m))[[0, 1, 3]], sp.poch(z, m)[[0, 1, 3]],
                               rtol=1e-12)
    nn, kk = np.array([5.0, 10.0, 4.0, 30.0]), np.array([2.0, 3.0, 5.0, 12.0])
    np.testing.assert_allclose(np.asarray(special.comb(nn, kk)), sp.comb(nn, kk), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(special.comb(5, 2, repetition=True)),
                               sp.comb(5, 2, repetition=True))
    np.testing.assert_allclose(np.asarray(special.multigammaln(np.array([3.0, 5.5]), 3)),
                               sp.multigammaln(np.array([3.0, 5.5]), 3), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(special.polygamma(np.array([0, 1, 3]), np.array(
        [1.5, 2.0, 0.7]))), sp.polygamma(np.array([0, 1, 3]), np.array([1.5, 2.0, 0.7])),
        rtol=1e-12)
    h, aa = RNG.normal(size=300) * 4, RNG.normal(size=300) * 3
    assert np.max(_rel(special.owens_t(h, aa), sp.owens_t(h, aa))) < 1e-12
    exact = [float(mp.bernoulli(k)) for k in range(21)]
    exact[1] = -0.5  # scipy's (and JAX's) convention B_1 = -1/2
    np.testing.assert_array_equal(np.asarray(special.bernoulli(20)), exact)
    np.testing.assert_allclose(np.asarray(special.factorial(np.array([0.0, 5.0, 3.5, -1.0]))),
                               sp.factorial(np.array([0.0, 5.0, 3.5, -1.0])), rtol=1e-13)


def test_hypergeometric_match_scipy():
    a, b, x = RNG.uniform(-5, 5, 400), RNG.uniform(0.1, 8, 400), RNG.uniform(-60, 60, 400)
    assert np.median(_rel(special.hyp1f1(a, b, x), sp.hyp1f1(a, b, x))) < 1e-14
    assert np.max(_rel(special.hyp1f1(a, b, x), sp.hyp1f1(a, b, x))) < 1e-11
    big = RNG.uniform(100, 600, 50)
    assert np.max(_rel(special.hyp1f1(1.5, 2.5, big), sp.hyp1f1(1.5, 2.5, big))) < 1e-13
    a, b, c = RNG.uniform(-3, 3, 400), RNG.uniform(-3, 3, 400), RNG.uniform(0.2, 5, 400)
    x = RNG.uniform(-5, 0.99, 400)
    ref = sp.hyp2f1(a, b, c, x)
    err = np.abs(np.asarray(special.hyp2f1(a, b, c, x)) - ref) / np.maximum(np.abs(ref), 1e-300)
    assert np.median(err) < 1e-14 and np.max(err) < 1e-9
    # next to x = 1 with c - a - b an integer (the logarithmic 1 - x transformations), where
    # scipy itself loses digits or gives nan: against mpmath
    a, b = RNG.uniform(-2.5, 3, 30), RNG.uniform(-2.5, 3, 30)
    c = a + b + RNG.integers(-3, 4, 30)
    x = 1 - 10 ** RNG.uniform(-7, -1, 30)
    keep = c > 0.1
    a, b, c, x = a[keep], b[keep], c[keep], x[keep]
    mp.mp.dps = 40
    ref = [float(mp.hyp2f1(*v)) for v in zip(a, b, c, x)]
    assert np.max(_rel(special.hyp2f1(a, b, c, x), ref)) < 1e-11
    # JAX's conventions at the edges
    np.testing.assert_array_equal(np.asarray(special.hyp1f1(np.array([0.0, 2.0, 1.0]), np.array(
        [0.0, 2.0, 0.0]), 1.0)), [1.0, np.e, np.inf])
    assert np.isinf(float(special.hyp2f1(1.0, 1.0, 2.0, 1.5)))


def test_bessel_jn_and_sph_harm_y_match_scipy():
    z = np.array([0.5, 1.0, 3.0, 10.0, -2.0])
    out = np.asarray(special.bessel_jn(z, v=4))
    assert out.shape == (5, 5)
    np.testing.assert_allclose(out, np.stack([sp.jv(k, z) for k in range(5)]), atol=1e-14)
    n = RNG.integers(0, 8, 100)
    m = np.array([RNG.integers(-k, k + 1) for k in n])
    theta, phi = RNG.uniform(0, np.pi, 100), RNG.uniform(0, 2 * np.pi, 100)
    got = np.asarray(special.sph_harm_y(n, m, theta, phi))
    np.testing.assert_allclose(got, sp.sph_harm_y(n, m, theta, phi), atol=1e-14)
    assert np.asarray(special.sph_harm_y(2, 1, 0.4, 0.3)).shape == (1,)


def test_wofz_matches_scipy():
    z = RNG.normal(size=300) * 5 + 1j * RNG.normal(size=300) * 5
    got = np.asarray(special.wofz(z))
    assert got.dtype == np.complex128
    assert np.max(np.abs(got - sp.wofz(z)) / np.abs(sp.wofz(z))) < 1e-13
    assert np.asarray(special.wofz(np.float32(0.5))).dtype == np.complex64


def test_complex_loggamma_and_gamma_match_scipy():
    z = RNG.normal(size=400) * 20 + 1j * RNG.normal(size=400) * 20
    got = np.asarray(special.loggamma(z))
    assert got.dtype == np.complex128
    ref = sp.loggamma(z)
    assert np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1)) < 1e-14
    near_axis = RNG.normal(size=400) * 3 + 1j * RNG.normal(size=400) * 1e-3
    ref = sp.loggamma(near_axis)
    assert np.max(np.abs(np.asarray(special.loggamma(near_axis)) - ref)
                  / np.maximum(np.abs(ref), 1)) < 1e-13
    small = z / 8
    assert np.max(np.abs(np.asarray(special.gamma(small)) - sp.gamma(small))
                  / np.abs(sp.gamma(small))) < 1e-13
    # d/dz loggamma = digamma, through autodiff of the complex formula (holomorphic)
    g = numbax.grad(lambda x: special.loggamma(x + 2j).real)(1.3)
    assert float(g) == pytest.approx(sp.digamma(1.3 + 2j).real, rel=1e-12)


def test_float32_and_int_inputs():
    assert special.erf(np.array([0.5], np.float32)).dtype == np.float32
    assert special.gammaln(np.array([5])).dtype == np.float64
    np.testing.assert_allclose(np.asarray(special.log_ndtr(np.array([-15.0, 0.5], np.float32))),
                               sp.log_ndtr(np.array([-15.0, 0.5])), rtol=1e-5)
    for name in ["erfcx", "dawsn", "expi", "exp1", "spence", "ndtri"]:
        x = np.array([0.02, 0.3, 0.7, 2.0], np.float32)
        out = getattr(special, name)(x)
        assert out.dtype == np.float32, name
        np.testing.assert_allclose(np.asarray(out), getattr(sp, name)(x.astype(float)),
                                   rtol=2e-6, err_msg=name)


def test_xlogy_xlog1py_values_and_jax_grads():
    x = np.array([0.0, 0.0, 2.0, 3.0, 0.0])
    y = np.array([0.0, 2.0, 3.0, 0.5, np.nan])
    np.testing.assert_allclose(np.asarray(special.xlogy(x, y)), sp.xlogy(x, y))
    y1 = np.array([-1.0, 2.0, 3.0, -0.5, np.nan])
    np.testing.assert_allclose(np.asarray(special.xlog1py(x, y1)), sp.xlog1py(x, y1))
    gx, gy = numbax.grad(special.xlogy, argnums=(0, 1))(0.0, 2.0)
    assert float(gx) == pytest.approx(np.log(2.0)) and float(gy) == 0.0
    gx, gy = numbax.grad(special.xlogy, argnums=(0, 1))(0.0, 0.0)
    assert float(gx) == -np.inf and np.isnan(float(gy))


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


GRADS = [
    ("erf", sp.erf, X[1:-1]), ("erfc", sp.erfc, X[1:-1]), ("gammaln", sp.gammaln, POS),
    ("digamma", sp.digamma, POS), ("expit", sp.expit, X), ("logit", sp.logit, P[1:-1]),
    ("ndtr", sp.ndtr, X), ("erfinv", sp.erfinv, np.array([-0.9, 0.0, 0.4])),
    ("log_ndtr", sp.log_ndtr, np.array([-30.0, -5.0, 0.0, 2.0, 9.0])),
    ("ndtri", sp.ndtri, np.array([1e-3, 0.2, 0.6, 0.97])),
    ("erfcx", sp.erfcx, np.array([-2.0, 0.5, 1.9, 2.1, 10.0])),
    ("dawsn", sp.dawsn, np.array([-3.0, 0.1, 0.25, 5.0])),
    ("expi", sp.expi, np.array([-3.0, 0.2, 5.0, 50.0])), ("exp1", sp.exp1, np.array([0.2, 3.0])),
    ("spence", sp.spence, np.array([0.2, 0.9, 1.0, 1.5, 6.0])),
    ("i0e", sp.i0e, np.array([-2.0, 0.5, 4.0])), ("i1e", sp.i1e, np.array([-2.0, 0.5, 4.0])),
    ("i0", sp.i0, np.array([-2.0, 0.5, 4.0])), ("i1", sp.i1, np.array([-2.0, 0.5, 4.0])),
    ("gamma", sp.gamma, np.array([-0.5, 0.7, 4.2])), ("entr", sp.entr, np.array([0.3, 2.0])),
]


@pytest.mark.parametrize("name,ref,x", GRADS, ids=[g[0] for g in GRADS])
def test_grads_match_finite_differences(name, ref, x):
    g = numbax.vmap(numbax.grad(getattr(special, name)))(x)
    np.testing.assert_allclose(np.asarray(g), _fd(ref, x), rtol=1e-5, atol=1e-12)


def test_pair_and_multi_argument_grads():
    x = np.array([-3.0, 0.5, 2.0, 6.0])
    for name, k in [("sici", 0), ("sici", 1), ("fresnel", 0), ("fresnel", 1)]:
        g = numbax.vmap(numbax.grad(lambda v, name=name, k=k: getattr(special, name)(v)[k]))(x)
        ref = _fd(lambda v, name=name, k=k: getattr(sp, name)(v)[k], x)
        np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-5, atol=1e-9, err_msg=name)
    for f, ref, args, argnums in [
        (special.zeta, sp.zeta, (3.0, 1.5), (0, 1)),
        (special.gammainc, sp.gammainc, (2.5, 1.5), (0, 1)),
        (special.gammaincc, sp.gammaincc, (0.7, 3.0), (0, 1)),
        (special.betainc, sp.betainc, (2.0, 3.0, 0.4), (2,)),
        (special.poch, sp.poch, (2.5, 1.5), (0, 1)),
        (special.owens_t, sp.owens_t, (0.7, 1.8), (0, 1)),
        (special.hyp1f1, sp.hyp1f1, (0.8, 1.7, 2.5), (0, 1, 2)),
        (special.hyp2f1, sp.hyp2f1, (0.8, 1.3, 2.7, 0.4), (0, 1, 2, 3)),
        (special.betaln, sp.betaln, (2.5, 40.0), (0, 1)),
    ]:
        grads = numbax.grad(f, argnums=argnums)(*args)
        for i, g in zip(argnums, grads):
            def shifted(v, i=i, ref=ref, args=args):
                return ref(*[v if j == i else a for j, a in enumerate(args)])
            np.testing.assert_allclose(float(g), _fd(shifted, args[i]), rtol=2e-6,
                                       err_msg=f"{f.__name__} d/d{i}")
    g = numbax.grad(lambda x: special.expn(3, x))(1.5)
    assert float(g) == pytest.approx(-sp.expn(2, 1.5), rel=1e-12)


def test_second_derivatives():
    check_grads(special.erfcx, (1.3,), order=2)
    check_grads(lambda x: special.zeta(x, 1.7), (2.5,), order=2)
    check_grads(special.ndtri, (0.2,), order=2)


def test_betainc_parameter_grads_raise_as_jax():
    with pytest.raises(ValueError, match="Betainc gradient"):
        numbax.grad(special.betainc)(1.0, 2.0, 0.5)


def test_logsumexp_softmax_match_scipy():
    a = RNG.normal(size=(3, 4)) * 10
    b = RNG.uniform(size=(3, 4))
    for kw in [{}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": -1, "b": b}]:
        np.testing.assert_allclose(np.asarray(special.logsumexp(a, **kw)),
                                   sp.logsumexp(a, **kw), rtol=1e-12)
    out, sign = special.logsumexp(np.array([1.0, 2.0]), b=np.array([1.0, -1.0]),
                                  return_sign=True)
    ref, rsign = sp.logsumexp(np.array([1.0, 2.0]), b=np.array([1.0, -1.0]), return_sign=True)
    assert float(out) == pytest.approx(ref) and float(sign) == rsign
    np.testing.assert_allclose(np.asarray(special.softmax(a)), sp.softmax(a), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(special.softmax(a, axis=1)), sp.softmax(a, axis=1),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(special.log_softmax(a, axis=0)),
                               sp.log_softmax(a, axis=0), rtol=1e-12)


def test_jit_and_vmap_agree_with_eager():
    x = np.array([0.3, 1.7, 6.0])
    fn = numbax.jit(lambda v: special.expi(v) + special.sici(v)[1] + special.erfcx(v))
    np.testing.assert_allclose(np.asarray(fn(x)),
                               sp.expi(x) + sp.sici(x)[1] + sp.erfcx(x), rtol=1e-13)
    batched = numbax.vmap(lambda a, v: special.hyp1f1(a, 2.0, v))(np.array([0.5, 1.5]),
                                                                    np.array([-3.0, 4.0]))
    np.testing.assert_allclose(np.asarray(batched), sp.hyp1f1([0.5, 1.5], 2.0, [-3.0, 4.0]),
                               rtol=1e-13)


UNARY_NAMES = ["bessel_jn", "dawsn", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1",
               "expi", "expit", "fresnel", "gamma", "gammaln", "gammasgn", "i0", "i0e", "i1",
               "i1e", "log_ndtr", "log_softmax", "loggamma", "logit", "ndtr", "ndtri", "sici",
               "softmax", "spence", "wofz", "factorial"]
BINARY_NAMES = ["beta", "betaln", "boxcox", "boxcox1p", "comb", "expn", "gammainc",
                "gammaincc", "kl_div", "owens_t", "poch", "rel_entr", "xlog1py", "xlogy",
                "zeta"]


@pytest.mark.parametrize("name", UNARY_NAMES + BINARY_NAMES + ["betainc", "hyp1f1", "hyp2f1",
                                                               "multigammaln", "polygamma",
                                                               "sph_harm_y", "logsumexp"])
def test_bad_argument_type_names_the_function(name):
    fn = getattr(special, name)
    args = {"bessel_jn": ("x",), "multigammaln": ("x", 2), "polygamma": (1, "x"),
            "sph_harm_y": (0, 0, "x", 0.0)}.get(name)
    if args is None:
        arity = 1 if name in UNARY_NAMES + ["logsumexp"] else 2 if name in BINARY_NAMES else \
            3 if name in ("betainc", "hyp1f1") else 4
        args = ("x",) + (1.0,) * (arity - 1)
    kwargs = {"v": 1} if name == "bessel_jn" else {}
    with pytest.raises(TypeError):
        fn(*args, **kwargs)


def test_bad_values_raise_clear_errors():
    with pytest.raises(NumbaxTypeError, match="special.erf: argument 0 has type str"):
        special.erf("x")
    with pytest.raises(NumbaxTypeError, match="expected a real dtype"):
        special.gammaln(np.array([1 + 1j]))
    with pytest.raises(NumbaxValueError, match="series_order"):
        special.log_ndtr(1.0, series_order=40)
    with pytest.raises(NumbaxValueError, match="polygamma: n has dtype float64"):
        special.polygamma(1.5, 2.0)
    with pytest.raises(NotImplementedError, match="Riemann"):
        special.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact=True"):
        special.factorial(3, exact=True)
    with pytest.raises(NumbaxValueError, match="bernoulli: n is -1"):
        special.bernoulli(-1)
    with pytest.raises(NumbaxValueError, match="bessel_jn: v is 60, larger than n_iter"):
        special.bessel_jn(1.0, v=60)
    with pytest.raises(NumbaxTypeError, match="multigammaln: d is 2.5"):
        special.multigammaln(3.0, 2.5)
    with pytest.raises(NumbaxValueError, match="multigammaln: d is 0"):
        special.multigammaln(3.0, 0)
    with pytest.raises(NumbaxTypeError, match="sph_harm_y: n has dtype float64"):
        special.sph_harm_y(np.array([1.0]), np.array([0]), 0.3, 0.2)
    with pytest.raises(NotImplementedError, match="diff_n"):
        special.sph_harm_y(1, 0, 0.3, 0.2, diff_n=1)
    with pytest.raises(NumbaxTypeError, match="log_softmax: x has dtype complex128"):
        special.log_softmax(np.array([1j]))
    with pytest.raises(numbax.errors.ConcretizationTypeError):
        numbax.jit(lambda v: special.bessel_jn(1.0, v=v))(2)
