"""numbax.random against jax.random outputs recorded in tests/data (no jax needed to run)."""
import json
import math
import pathlib

import numpy as np
import pytest

import numbax
from numbax import random
from numbax._src.core import jaxpr_as_fun
from numbax.errors import NumbaxTypeError, NumbaxValueError

_DATA = pathlib.Path(__file__).parent / "data"
REF = json.loads((_DATA / "random_jax_reference.json").read_text())
R32, R64 = REF["x32"], REF["x64"]
SAMPLERS = json.loads((_DATA / "samplers_jax_reference.json").read_text())


def _load(entry):
    """An array recorded by make_samplers_reference.py (floats as their bit patterns)."""
    dtype = np.dtype(entry["dtype"])
    if dtype.kind == "f":
        raw = np.array(entry["bits"], f"u{dtype.itemsize}")
        return raw.view(dtype).reshape(entry["shape"])
    return np.array(entry["bits"], dtype).reshape(entry["shape"])


@pytest.fixture
def x32():
    with numbax.config.override("jax_enable_x64", False):
        yield


def _eq(got, want, dtype=None):
    got = np.asarray(got)
    want = np.asarray(want, dtype=got.dtype if dtype is None else dtype)
    np.testing.assert_array_equal(got, want)


def _ulp(got, want, maxulp):
    got = np.asarray(got)
    np.testing.assert_array_max_ulp(got, np.asarray(want, got.dtype), maxulp=maxulp)


# ----------------------------------------------------------------------------- bit-exact core


@pytest.mark.usefixtures("x32")
class TestBitExact:
    def test_reference_is_partitionable_default(self):
        assert R32["partitionable"] is True

    def test_prngkey(self):
        for seed, want in R32["PRNGKey"].items():
            k = random.PRNGKey(int(seed))
            assert k.dtype == np.uint32 and k.shape == (2,)
            _eq(k, want)

    def test_split(self):
        for seed, want in R32["split3"].items():
            _eq(random.split(random.PRNGKey(int(seed)), 3), want)
        _eq(random.split(random.PRNGKey(7), (2, 2)), R32["split_2x2"])

    def test_fold_in(self):
        for d, want in R32["fold_in"].items():
            _eq(random.fold_in(random.PRNGKey(3), int(d)), want)

    def test_bits(self):
        k = random.PRNGKey(0)
        _eq(random.bits(k, (5,), "uint32"), R32["bits_u32_5"])
        _eq(random.bits(random.PRNGKey(9), (2, 3), "uint32"), R32["bits_u32_2x3"])
        _eq(random.bits(random.PRNGKey(9), (), "uint32"), R32["bits_u32_scalar"])
        out = random.bits(k, (4,), "uint8")
        assert out.dtype == np.uint8
        _eq(out, R32["bits_u8_4"])
        _eq(random.bits(k, (4,), "uint16"), R32["bits_u16_4"])
        assert random.bits(k, (2,)).dtype == np.uint32  # x32 default

    def test_uniform(self):
        u = random.uniform(random.PRNGKey(0), (5,))
        assert u.dtype == np.float32
        _eq(u, R32["uniform_5"])
        u = random.uniform(random.PRNGKey(1), (2, 3), minval=np.float32([-1, 0, 2]), maxval=4.0)
        # XLA contracts floats * span + minval into one FMA; numbax rounds twice (1 ulp).
        _ulp(u, R32["uniform_range"], 1)

    def test_integer_samplers(self):
        k = random.PRNGKey(0)
        _eq(random.randint(k, (6,), 0, 10), R32["randint_0_10"])
        _eq(random.randint(random.PRNGKey(2), (2, 3), -5, 5), R32["randint_m5_5"])
        out = random.randint(random.PRNGKey(2), (5,), -100, 100, "int8")
        assert out.dtype == np.int8
        _eq(out, R32["randint_int8"])
        _eq(random.bernoulli(k, 0.3, (8,)), R32["bernoulli"])

    def test_permutation_and_choice(self):
        k = random.PRNGKey(0)
        _eq(random.permutation(k, 10), R32["permutation_10"])
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        _eq(random.permutation(random.PRNGKey(4), x), R32["permutation_rows"])
        _eq(random.permutation(random.PRNGKey(4), x, axis=1, independent=True),
            R32["permutation_indep"])
        _eq(random.choice(k, 10, (3,), replace=False), R32["choice_noreplace"])
        _eq(random.choice(random.PRNGKey(8), np.float32([5, 6, 7, 8]), (5,)),
            R32["choice_replace"])
        _eq(random.choice(k, 10, (3,), p=np.ones(10, np.float32) / 10), R32["choice_p"])

    def test_categorical(self):
        logits = np.log(np.float32([0.2, 0.3, 0.5]))
        _eq(random.categorical(random.PRNGKey(0), logits, shape=(8,)), R32["categorical"])
        _eq(random.categorical(random.PRNGKey(3), np.zeros((2, 5), np.float32)),
            R32["categorical_2d"])


# ----------------------------------------------------------------------------- to a few ulp


@pytest.mark.usefixtures("x32")
class TestTranscendental:
    """erf_inv/log come from scipy/numpy here and from XLA's approximations in JAX."""

    def test_normal(self):
        out = random.normal(random.PRNGKey(0), (3,))
        assert out.dtype == np.float32 and out.shape == (3,)
        _eq(out, R32["normal_3"])
        _eq(random.normal(random.PRNGKey(5), (2, 4)), R32["normal_2x4"])

    def test_gumbel_exponential_truncated(self):
        k = random.PRNGKey(0)
        _ulp(random.gumbel(k, (4,)), R32["gumbel"], 4)
        _ulp(random.exponential(k, (4,)), R32["exponential"], 4)
        _ulp(random.truncated_normal(k, -1.0, 1.0, (3,)), R32["truncated_normal"], 4)

    def test_gamma_family_matches_jax(self):
        k = random.PRNGKey(0)
        rtol = 2e-6
        np.testing.assert_allclose(random.gamma(k, np.float32([0.5, 1.0, 3.0])), R32["gamma"],
                                   rtol=rtol)
        np.testing.assert_allclose(random.beta(k, 2.0, 3.0, (3,)), R32["beta"], rtol=rtol)
        np.testing.assert_allclose(random.dirichlet(k, np.float32([1.0, 2.0, 3.0])),
                                   R32["dirichlet"], rtol=rtol)
        cov = np.float32([[2.0, 1.0], [1.0, 2.0]])
        np.testing.assert_allclose(
            random.multivariate_normal(k, np.float32([1.0, -1.0]), cov, (2,)), R32["mvn"],
            rtol=1e-5, atol=1e-6)


class TestErfInvLikeXla:
    """float32 erf_inv computed step for step as XLA:CPU does, so normal draws are JAX's bits."""

    def test_fma32_is_correctly_rounded(self):
        from fractions import Fraction

        from numbax._src.lax.erf_inv_xla import fma32
        rng = np.random.default_rng(0)
        a = rng.standard_normal(3000).astype(np.float32)
        b = rng.standard_normal(3000).astype(np.float32)
        c = rng.standard_normal(3000).astype(np.float32)
        # halfway cases: c cancels a * b down to a float32 midpoint plus a tiny remainder
        a[:1000] = np.float32(1 + 2.0 ** -12)
        b[:1000] = np.float32(1 + 2.0 ** -12)
        # below float64's last bit: a float64 sum would round to the midpoint, then to even
        c[:1000] = rng.integers(-50, 50, 1000) * np.float32(2.0 ** -60)
        c[1000:1500] = rng.integers(-50, 50, 500) * np.float32(2.0 ** -30)
        a[1000:1500], b[1000:1500] = a[0], b[0]
        got = fma32(a, b, c)
        for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist()):
            exact = Fraction(x) * Fraction(y) + Fraction(z)
            lo = np.float32(float(exact))
            cands = [np.nextafter(lo, np.float32(-np.inf)), lo,
                     np.nextafter(lo, np.float32(np.inf))]
            best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                             int(np.float32(v).view(np.uint32)) & 1))
            assert g == float(best), (x, y, z)

    def test_erf_inv_float32_bits_match_jax(self):
        ref = SAMPLERS["erf_inv"]
        x, want = _load(ref["x"]), _load(ref["erf_inv"])
        got = np.asarray(numbax.lax.erf_inv(x))
        normal_result = np.abs(got) >= np.finfo(np.float32).tiny
        normal_result |= ~np.isfinite(got)
        np.testing.assert_array_equal(got[normal_result], want[normal_result])
        # XLA:CPU flushes subnormal results to zero; numbax keeps them (gradual underflow).
        assert np.all(want[~normal_result] == 0)
        np.testing.assert_allclose(got[~normal_result], 0.886227 * x[~normal_result], rtol=1e-5)

    def test_erf_inv_float16_bits_match_jax(self):
        ref = SAMPLERS["erf_inv"]
        got = numbax.lax.erf_inv(_load(ref["x_f16"]))
        assert got.dtype == np.float16
        _eq(got, _load(ref["erf_inv_f16"]))

    def test_float64_stays_scipy(self):
        from scipy import special
        x = np.linspace(-0.999, 0.999, 101)
        np.testing.assert_array_equal(numbax.lax.erf_inv(x), special.erfinv(x))

    @pytest.mark.usefixtures("x32")
    def test_normal_bits_match_jax(self):
        ref = SAMPLERS["normal"]
        for seed in (0, 1, 7, 42, 2 ** 31 - 1):
            _eq(random.normal(random.PRNGKey(seed), (64,)), _load(ref[f"normal_{seed}"]))
        got = random.normal(random.PRNGKey(3), (32,), np.float16)
        assert got.dtype == np.float16
        _eq(got, _load(ref["normal_f16"]))
        # erf goes through scipy here and XLA's polynomial in JAX: a few ulp, not bits.
        _ulp(random.truncated_normal(random.PRNGKey(4), -0.5, 2.0, (16,)),
             _load(ref["truncated_normal"]), 4)


class TestX64:
    def test_prngkey_64bit_seed(self):
        for seed, want in R64["PRNGKey"].items():
            _eq(random.PRNGKey(int(seed)), want)

    def test_64bit_draws(self):
        k = random.PRNGKey(0)
        b = random.bits(k, (3,))
        assert b.dtype == np.uint64
        _eq(b, [int(v) for v in R64["bits_u64_3"]])
        u = random.uniform(k, (4,))
        assert u.dtype == np.float64
        _eq(u, R64["uniform_f64_4"])
        _ulp(random.normal(k, (4,)), R64["normal_f64_4"], 4)
        _eq(random.randint(k, (4,), 0, 1000), R64["randint_i64"])


# ----------------------------------------------------------------------------- distributions


def _ks_stat(samples, cdf):
    x = np.sort(np.asarray(samples, np.float64))
    n = x.size
    c = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


def _gamma_cdf(a):
    from scipy import special
    return lambda x: special.gammainc(a, x)


class TestDistributions:
    n = 4000
    ks_bound = 1.63 / math.sqrt(4000)  # 1% level
    n_gamma = 150  # gamma runs a while_loop per draw, slow in eager mode
    ks_gamma = 1.63 / math.sqrt(150)

    def test_uniform_normal_ks(self):
        from scipy import special
        k1, k2 = random.split(random.PRNGKey(11))
        assert _ks_stat(random.uniform(k1, (self.n,)), lambda x: x) < self.ks_bound
        phi = lambda x: 0.5 * (1 + special.erf(x / np.sqrt(2)))  # noqa: E731
        assert _ks_stat(random.normal(k2, (self.n,)), phi) < self.ks_bound

    @pytest.mark.parametrize("a", [0.3, 1.0, 4.5])
    def test_gamma_ks(self, a):
        s = np.asarray(random.gamma(random.PRNGKey(3), a, (self.n_gamma,)))
        assert s.dtype == np.float64 and np.all(s > 0)
        assert _ks_stat(s, _gamma_cdf(a)) < self.ks_gamma

    def test_beta_dirichlet_moments(self):
        n = 100
        s = np.asarray(random.beta(random.PRNGKey(4), 2.0, 5.0, (n,)))
        assert abs(s.mean() - 2 / 7) < 4 * 0.16 / np.sqrt(n)  # sd of Beta(2, 5) is 0.16
        alpha = np.array([1.0, 2.0, 3.0])
        d = np.asarray(random.dirichlet(random.PRNGKey(5), alpha, (60,)))
        assert d.shape == (60, 3)
        np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(d.mean(0), alpha / 6, atol=4 * 0.2 / np.sqrt(60))

    def test_truncated_normal_bounds_and_mean(self):
        s = np.asarray(random.truncated_normal(random.PRNGKey(6), 0.0, 2.0, (self.n,)))
        assert s.min() > 0.0 and s.max() < 2.0
        # mean of N(0,1) truncated to (0, 2): (phi(0) - phi(2)) / (Phi(2) - Phi(0))
        pdf = lambda x: np.exp(-x * x / 2) / np.sqrt(2 * np.pi)  # noqa: E731
        assert abs(s.mean() - (pdf(0) - pdf(2)) / 0.47724986805) < 0.03

    def test_mvn_covariance(self):
        cov = np.array([[2.0, 0.8], [0.8, 1.0]])
        s = np.asarray(random.multivariate_normal(random.PRNGKey(8), np.array([1.0, -2.0]),
                                                  cov, (self.n,)))
        np.testing.assert_allclose(s.mean(0), [1.0, -2.0], atol=0.08)
        np.testing.assert_allclose(np.cov(s.T), cov, atol=0.15)  # ~5 standard errors

    def test_discrete_frequencies(self):
        p = np.array([0.1, 0.2, 0.7])
        c = np.asarray(random.categorical(random.PRNGKey(8), np.log(p), shape=(self.n,)))
        np.testing.assert_allclose(np.bincount(c, minlength=3) / self.n, p, atol=0.03)
        b = np.asarray(random.bernoulli(random.PRNGKey(9), 0.25, (self.n,)))
        assert abs(b.mean() - 0.25) < 0.03
        r = np.asarray(random.randint(random.PRNGKey(10), (self.n,), 3, 7))
        assert r.min() == 3 and r.max() == 6
        perm = np.asarray(random.permutation(random.PRNGKey(1), 50))
        assert sorted(perm.tolist()) == list(range(50))
        ch = np.asarray(random.choice(random.PRNGKey(2), 20, (20,), replace=False))
        assert sorted(ch.tolist()) == list(range(20))


# ----------------------------------------------------------------------------- keys & transforms


class TestKeysAndTransforms:
    def test_typed_keys_match_raw(self):
        tk, rk = random.key(42), random.PRNGKey(42)
        assert isinstance(tk, random.PRNGKeyArray) and tk.shape == ()
        _eq(random.key_data(tk), rk)
        ts = random.split(tk, 4)
        assert isinstance(ts, random.PRNGKeyArray) and ts.shape == (4,)
        _eq(random.key_data(ts), random.split(rk, 4))
        _eq(random.key_data(random.fold_in(tk, 5)), random.fold_in(rk, 5))
        _eq(random.uniform(ts[1], (3,)), random.uniform(random.split(rk, 4)[1], (3,)))
        w = random.wrap_key_data(random.split(rk, 2))
        _eq(random.normal(w[0], (2,)), random.normal(random.split(rk, 2)[0], (2,)))

    @pytest.mark.parametrize("name", ["uniform", "normal", "gumbel", "exponential", "randint",
                                      "bernoulli", "permutation", "split", "fold_in", "gamma",
                                      "categorical", "choice"])
    def test_vmap_over_keys_equals_loop(self, name):
        fns = {
            "uniform": lambda k: random.uniform(k, (3,)),
            "normal": lambda k: random.normal(k, (2, 2)),
            "gumbel": lambda k: random.gumbel(k, (3,)),
            "exponential": lambda k: random.exponential(k, (3,)),
            "randint": lambda k: random.randint(k, (4,), -3, 9),
            "bernoulli": lambda k: random.bernoulli(k, 0.4, (5,)),
            "permutation": lambda k: random.permutation(k, 6),
            "split": lambda k: random.split(k, 3),
            "fold_in": lambda k: random.fold_in(k, 17),
            "gamma": lambda k: random.gamma(k, np.array([0.5, 2.0])),
            "categorical": lambda k: random.categorical(k, np.zeros(4), shape=(3,)),
            "choice": lambda k: random.choice(k, 7, (3,), replace=False),
        }
        f = fns[name]
        keys = random.split(random.PRNGKey(123), 3)
        _eq(numbax.vmap(f)(keys), np.stack([np.asarray(f(k)) for k in keys]))

    def test_vmap_typed_keys_and_seeds(self):
        tks = random.split(random.key(0), 3)
        out = numbax.vmap(lambda k: random.uniform(k, (2,)))(tks)
        _eq(out, np.stack([np.asarray(random.uniform(k, (2,))) for k in tks]))
        seeds = np.array([0, 5, 2 ** 40])
        _eq(numbax.vmap(random.PRNGKey)(seeds), np.stack([random.PRNGKey(int(s)) for s in seeds]))

    def test_make_jaxpr_and_jit(self):
        f = lambda k: random.normal(k, (3,))  # noqa: E731
        jaxpr = numbax.make_jaxpr(f)(random.PRNGKey(0))
        text = str(jaxpr)
        assert "threefry2x32" in text and "erf_inv" in text and "shift_right_logical" in text
        (out,) = jaxpr_as_fun(jaxpr)(random.PRNGKey(0))
        _eq(out, f(random.PRNGKey(0)))
        g = lambda k: random.uniform(k, (4,))  # noqa: E731
        _eq(numbax.jit(g)(random.PRNGKey(3)), g(random.PRNGKey(3)))

    def test_normal_under_jit_fuses_erf_inv(self):
        """jit runs erf_inv inside the fused loop (no call to the eager impl from the driver).
        float32 follows XLA's float32 polynomial step for step, so jit equals eager bit for
        bit; float64 is fastmath's evaluation, a few ulp from the eager value."""
        for dtype, inline, maxulp in ((np.float32, "xe.erf_inv_f32", 0),
                                      (np.float64, "fe.erf_inv_f64", 8)):
            f = lambda k, dtype=dtype: random.normal(k, (1000,), dtype=dtype)  # noqa: E731
            text = numbax.jit(f).lower(random.PRNGKey(0)).as_text()
            assert inline in text and "call_impl('erf_inv'" not in text
            _ulp(numbax.jit(f)(random.PRNGKey(4)), f(random.PRNGKey(4)), maxulp)

    def test_split_keys_differ(self):
        ks = np.asarray(random.split(random.PRNGKey(0), 100))
        assert len({tuple(k) for k in ks.tolist()}) == 100


# ----------------------------------------------------------------------------- bad input


class TestBadInput:
    def test_shape_not_tuple(self):
        k = random.PRNGKey(0)
        with pytest.raises(NumbaxTypeError, match=r"random.uniform: shape has value 3"):
            random.uniform(k, 3)
        with pytest.raises(NumbaxTypeError, match="shape"):
            random.normal(k, (2.5,))
        with pytest.raises(NumbaxValueError, match="non-negative"):
            random.bits(k, (-1,))

    def test_minval_not_broadcastable(self):
        k = random.PRNGKey(0)
        with pytest.raises(NumbaxValueError, match=r"minval has shape \(3,\).*shape=\(2,\)"):
            random.uniform(k, (2,), minval=np.zeros(3))
        with pytest.raises(NumbaxValueError, match=r"maxval has shape \(4,\)"):
            random.randint(k, (2, 3), 0, np.ones(4, int))
        with pytest.raises(NumbaxValueError, match="lower has shape"):
            random.truncated_normal(k, np.zeros(2), np.ones(3))

    @pytest.mark.parametrize("fn", [
        lambda k: random.uniform(k), lambda k: random.normal(k), lambda k: random.split(k),
        lambda k: random.fold_in(k, 1), lambda k: random.bits(k), lambda k: random.gamma(k, 1.),
        lambda k: random.randint(k, (), 0, 2), lambda k: random.permutation(k, 3),
        lambda k: random.categorical(k, np.zeros(3)), lambda k: random.bernoulli(k),
        lambda k: random.choice(k, 3), lambda k: random.exponential(k),
        lambda k: random.gumbel(k), lambda k: random.beta(k, 1., 1.),
        lambda k: random.dirichlet(k, np.ones(2)), lambda k: random.loggamma(k, 1.),
        lambda k: random.truncated_normal(k, -1., 1.),
        lambda k: random.multivariate_normal(k, np.zeros(2), np.eye(2)),
    ])
    def test_non_key_names_the_argument(self, fn):
        with pytest.raises(NumbaxTypeError, match=r"key has shape \(3,\) and dtype int64"):
            fn(np.arange(3))

    def test_other_bad_input(self):
        k = random.PRNGKey(0)
        with pytest.raises(NumbaxValueError, match="expected a single key"):
            random.normal(random.split(k, 2))
        with pytest.raises(NumbaxTypeError, match="dtype is int32"):
            random.uniform(k, (2,), np.int32)
        with pytest.raises(NumbaxTypeError, match="dtype is float32"):
            random.randint(k, (2,), 0, 3, np.float32)
        with pytest.raises(NumbaxTypeError, match="unsigned"):
            random.bits(k, (2,), np.int32)
        with pytest.raises(NumbaxTypeError, match="p has dtype int"):
            random.bernoulli(k, np.array(1))
        with pytest.raises(NumbaxTypeError, match="seed has shape"):
            random.PRNGKey(np.array([1, 2]))
        with pytest.raises(NumbaxTypeError, match="data has shape"):
            random.fold_in(k, np.array([1, 2]))
        with pytest.raises(NumbaxValueError, match="replace=False"):
            random.choice(k, 3, (4,), replace=False)
        with pytest.raises(NumbaxValueError, match=r"p has shape \(2,\)"):
            random.choice(k, 3, (2,), p=np.ones(2) / 2)
        with pytest.raises(NumbaxValueError, match="axis is 2"):
            random.permutation(k, np.zeros((2, 2)), axis=2)
        with pytest.raises(NumbaxValueError, match="mean has shape"):
            random.multivariate_normal(k, np.zeros(2), np.eye(3))
        with pytest.raises(NumbaxValueError, match="alpha has shape"):
            random.dirichlet(k, 1.0)
        with pytest.raises(NumbaxValueError, match="categorical: shape is"):
            random.categorical(k, np.zeros((2, 3)), shape=(3,))


# ----------------------------------------------------------------------------- keys, as JAX

KEYS = SAMPLERS["keys"]


class TestKeyApi:
    def test_prngkey_edge_seeds_match_jax(self):
        seeds = {"int64_max": 2 ** 63 - 1, "int64_min": -2 ** 63, "true": True,
                 "uint64_big": np.uint64(2 ** 63 + 5), "int8_m1": np.int8(-1)}
        for x64 in (False, True):
            with numbax.config.override("jax_enable_x64", x64):
                for name, seed in seeds.items():
                    _eq(random.PRNGKey(seed), KEYS[f"prngkey_x64_{x64}"][name])

    @pytest.mark.parametrize("seed", [2 ** 63, 2 ** 64, 2 ** 64 + 1, -2 ** 63 - 1, 10 ** 30])
    def test_prngkey_overflow(self, seed):
        """Issue 21 item 5: JAX raises OverflowError (np.int64(seed)); it used to wrap."""
        for fn in (random.PRNGKey, random.key):
            with pytest.raises(OverflowError, match=r"seed is -?\d+, expected an integer in"):
                fn(seed)

    def test_fold_in_data_as_jax(self):
        k = random.PRNGKey(3)
        data = {"2**31": 2 ** 31, "np_int64_2**40": np.int64(2 ** 40), "float_1": 1.0,
                "true": True, "np_uint32_max": np.uint32(2 ** 32 - 1)}
        for name, d in data.items():
            _eq(random.fold_in(k, d), KEYS["fold_in"][name])
        for bad in (-1, 2 ** 32):
            with pytest.raises(OverflowError, match=r"fold_in: data is -?\d+"):
                random.fold_in(k, bad)

    def test_typed_key_printing_and_dtype(self):
        assert repr(random.key(0)) == KEYS["repr_key"]
        assert repr(random.split(random.key(0), 2)) == KEYS["repr_split"]
        assert random.key_impl(random.key(0)) == KEYS["key_impl"] == "threefry2x32"
        assert random.key_impl(random.PRNGKey(0)) == "threefry2x32"
        assert repr(random.key_dtype()) == KEYS["key_dtype"]
        assert random.key(0).dtype == random.key_dtype("threefry2x32")
        assert random.key(0).dtype.name == "key<fry>" and random.key(0).itemsize == 8
        assert random.key(0).dtype != np.dtype(np.uint32)

    def test_key_and_wrap_accept_dtype(self):
        data = random.key_data(random.key(42))
        k = random.wrap_key_data(data, dtype=random.key(0).dtype)
        assert bool(k == random.key(42)) and not bool(k != random.key(42))
        _eq(random.key_data(random.key(5, dtype="threefry2x32")), random.PRNGKey(5))
        _eq(random.key_data(random.key(5, impl="threefry2x32")), random.PRNGKey(5))
        _eq(random.key_data(random.key(5, impl=random.PRNGSpec("threefry2x32"))),
            random.PRNGKey(5))
        keys = random.split(random.key(1), 4)
        _eq(keys == keys[np.array([0, 0, 2, 1])], [True, False, True, False])

    def test_clone(self):
        raw = random.PRNGKey(9)
        _eq(random.clone(raw), raw)
        typed = random.clone(random.key(9))
        assert isinstance(typed, random.PRNGKeyArray)
        _eq(random.key_data(typed), raw)

    def test_key_array_methods(self):
        keys = random.split(random.key(0), (2, 3))
        assert keys.shape == (2, 3) and keys.ndim == 2 and keys.size == 6 and len(keys) == 2
        assert keys.T.shape == (3, 2) and keys.reshape(-1).shape == (6,)
        assert keys.reshape(1, 6).squeeze().shape == (6,) and keys.ravel().shape == (6,)
        _eq(random.key_data(keys.T), np.swapaxes(np.asarray(random.key_data(keys)), 0, 1))
        assert [k.shape for k in keys] == [(3,), (3,)]
        with pytest.raises(TypeError, match="len"):
            len(random.key(0))
        with pytest.raises(TypeError, match="iteration over a 0-d key array"):
            iter(random.key(0))
        with pytest.raises(TypeError, match="boolean"):
            bool(random.key(0))
        with pytest.raises(TypeError, match="key_data"):
            np.asarray(random.key(0))
        with pytest.raises(TypeError):
            hash(random.key(0))

    def test_bad_key_api_input_names_the_argument(self):
        with pytest.raises(NumbaxValueError, match="impl is 'rbg', expected 'threefry2x32'"):
            random.key(0, impl="rbg")
        with pytest.raises(NumbaxValueError, match="impl is 'rbg'"):
            random.PRNGKey(0, impl=random.PRNGSpec("rbg"))
        with pytest.raises(NumbaxValueError, match="both impl and dtype"):
            random.key(0, impl="threefry2x32", dtype="threefry2x32")
        with pytest.raises(NumbaxTypeError, match="impl has type int"):
            random.key_dtype(3)
        with pytest.raises(NumbaxTypeError, match=r"wrap_key_data: key_bits_array has shape "
                                                  r"\(3,\) and dtype uint32"):
            random.wrap_key_data(np.zeros(3, np.uint32))
        with pytest.raises(NumbaxTypeError, match="key_bits_array is already a key array"):
            random.wrap_key_data(random.key(0))
        with pytest.raises(NumbaxTypeError, match=r"key_data: keys has shape \(2, 3\)"):
            random.key_data(np.zeros((2, 3), np.uint32))
        with pytest.raises(NumbaxTypeError, match=r"key_impl: keys has shape \(\) and dtype"):
            random.key_impl(np.float32(1))
        with pytest.raises(NumbaxTypeError, match=r"clone: key has type str"):
            random.clone("key")
        with pytest.raises(NumbaxValueError, match="num has value"):
            random.split(random.key(0), -1)
        with pytest.raises(NumbaxTypeError, match="x2 has type int while another operand is a key"):
            random.key(0) == 0  # noqa: B015
