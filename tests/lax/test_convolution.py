"""lax.conv_general_dilated and the convolutions on top of it: eager results vs a direct loop
and scipy, outputs and gradients vs JAX's (tests/data/conv_jax_reference.npz), shape helpers,
vmap and jit, and bad input. The primitive's matrix rows live in matrix_cases/convolution.py."""
import doctest
import itertools
import pathlib

import numpy as np
import pytest
import scipy.signal

import numbax
from numbax import lax
from numbax._src.lax import conv_numpy, conv_ops, convolution
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

REF = np.load(pathlib.Path(__file__).parents[1] / "data" / "conv_jax_reference.npz")
RNG = np.random.default_rng(7)

# the cases make_conv_reference.py recorded (kwargs of conv_general_dilated)
CONV_CASES = {
    "nchw_same": dict(window_strides=(1, 1), padding="SAME"),
    "nhwc_strided": dict(window_strides=(2, 1), padding=((1, 2), (0, -1)), lhs_dilation=(1, 2),
                         rhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "NHWC")),
    "feature_groups": dict(window_strides=(2,), padding="VALID", rhs_dilation=(2,),
                           feature_group_count=2),
    "depthwise": dict(window_strides=(1,), padding="SAME_LOWER",
                      dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=4),
    "batch_groups": dict(window_strides=(1,), padding=((2, 1),), lhs_dilation=(3,),
                         batch_group_count=2),
    "batch_groups_odd_layout": dict(window_strides=(2,), padding=((1, 0),),
                                    dimension_numbers=("CNW", "WOI", "WNC"),
                                    batch_group_count=3),
    "conv3d": dict(window_strides=(1, 2, 1), padding="SAME",
                   dimension_numbers=("NDHWC", "DHWIO", "NCDHW")),
}


def loop_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dnums, groups=1, batch_groups=1):
    """XLA's convolution semantics spelled out element by element (small inputs only)."""
    lhs_spec, rhs_spec, out_spec = dnums
    x, w = np.transpose(lhs, lhs_spec), np.transpose(rhs, rhs_spec)
    n_all, chans = x.shape[:2]
    n_out_f = w.shape[0]
    dilated = [(s - 1) * d + 1 for s, d in zip(x.shape[2:], lhs_dil)]
    xd = np.zeros((n_all, chans, *dilated))
    xd[(slice(None), slice(None), *[slice(None, None, d) for d in lhs_dil])] = x
    padded = [s + lo + hi for s, (lo, hi) in zip(dilated, padding)]
    xp = np.zeros((n_all, chans, *padded))
    for idx in itertools.product(*map(range, padded)):
        src = [i - lo for i, (lo, _) in zip(idx, padding)]
        if all(0 <= s < n for s, n in zip(src, dilated)):
            xp[(slice(None), slice(None), *idx)] = xd[(slice(None), slice(None), *src)]
    ksize = w.shape[2:]
    kdil = [(k - 1) * r + 1 for k, r in zip(ksize, rhs_dil)]
    out_sp = [max(0, (p - k) // s + 1) for p, k, s in zip(padded, kdil, strides)]
    n = n_all // batch_groups
    per_group = n_out_f // (groups * batch_groups)
    c = chans // groups
    out = np.zeros((n, n_out_f, *out_sp))
    for b, f in itertools.product(range(n), range(n_out_f)):
        g = f // per_group
        gb, gf = (g, 0) if batch_groups > 1 else (0, g)
        for pos in itertools.product(*map(range, out_sp)):
            for ci, kpos in itertools.product(range(c), itertools.product(*map(range, ksize))):
                xi = tuple(p * s + k * r for p, s, k, r in zip(pos, strides, kpos, rhs_dil))
                out[(b, f, *pos)] += xp[(gb * n + b, gf * c + ci, *xi)] * w[(f, ci, *kpos)]
    return np.transpose(out, np.argsort(out_spec))


@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv_matches_loop_and_jax(name):
    kwargs = CONV_CASES[name]
    lhs, rhs = REF[f"conv/{name}/lhs"], REF[f"conv/{name}/rhs"]
    got = lax.conv_general_dilated(lhs, rhs, **kwargs)
    np.testing.assert_allclose(np.asarray(got), REF[f"conv/{name}/out"], rtol=1e-12, atol=1e-12)
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, kwargs.get("dimension_numbers"))
    nsp = lhs.ndim - 2
    padding = kwargs["padding"]
    if isinstance(padding, str):
        kernel = convolution.dilate_shape(np.take(rhs.shape, dn.rhs_spec)[2:],
                                           kwargs.get("rhs_dilation", (1,) * nsp))
        padding = lax.padtype_to_pads(np.take(lhs.shape, dn.lhs_spec)[2:], kernel,
                                      kwargs["window_strides"], padding)
    want = loop_conv(lhs, rhs, kwargs["window_strides"], padding,
                     kwargs.get("lhs_dilation", (1,) * nsp), kwargs.get("rhs_dilation", (1,) * nsp),
                     dn, kwargs.get("feature_group_count", 1), kwargs.get("batch_group_count", 1))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv_gradients_match_jax(name):
    kwargs = CONV_CASES[name]
    lhs, rhs = REF[f"conv/{name}/lhs"], REF[f"conv/{name}/rhs"]
    _, pull = numbax.vjp(lambda x, w: lax.conv_general_dilated(x, w, **kwargs), lhs, rhs)
    g_lhs, g_rhs = pull(REF[f"conv/{name}/ct"])
    np.testing.assert_allclose(np.asarray(g_lhs), REF[f"conv/{name}/g_lhs"], rtol=1e-11,
                               atol=1e-11)
    np.testing.assert_allclose(np.asarray(g_rhs), REF[f"conv/{name}/g_rhs"], rtol=1e-11,
                               atol=1e-11)


@pytest.mark.parametrize("groups_f,groups_b,rhs_dil", [(1, 1, (1, 1)), (2, 1, (2, 1)),
                                                      (1, 2, (1, 3))])
def test_numpy_kernel_forms_agree(groups_f, groups_b, rhs_dil):
    """The tap-GEMM and position-GEMM forms against im2col and the element loop."""
    x = RNG.normal(size=(2 * groups_b, 8 * groups_f, 7, 6))
    w = RNG.normal(size=(4 * groups_f * groups_b, 8, 2, 3))
    kdil = convolution.dilate_shape(w.shape[2:], rhs_dil)
    out_sp = tuple(s - k + 1 for s, k in zip(x.shape[2:], kdil))
    ref = conv_numpy._im2col_conv(x, w, (1, 1), rhs_dil, groups_f, groups_b)
    taps = conv_numpy._tap_conv(x, w, rhs_dil, out_sp, groups_f, groups_b)
    np.testing.assert_allclose(taps, ref, rtol=1e-12, atol=1e-12)
    dn = lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    loop = loop_conv(x, w, (1, 1), ((0, 0), (0, 0)), (1, 1), rhs_dil, dn, groups_f, groups_b)
    np.testing.assert_allclose(ref, loop, rtol=1e-12, atol=1e-12)
    if groups_f == groups_b == 1:  # a big window over few outputs, strided
        big = RNG.normal(size=(3, 5, 3, 2))
        for strides in ((1, 1), (2, 1)):
            kd = convolution.dilate_shape(big.shape[2:], rhs_dil)
            out_sp = tuple((s - k) // st + 1 for s, k, st in zip(x.shape[2:], kd, strides))
            pos = conv_numpy._position_conv(x[:, :5], big, strides, rhs_dil, out_sp)
            ref = conv_numpy._im2col_conv(x[:, :5], big, strides, rhs_dil, 1, 1)
            np.testing.assert_allclose(pos, ref, rtol=1e-12, atol=1e-12)


def test_channels_last_convolution_and_gradients_by_taps():
    """NHWC with 16 channels takes the tap form forward and for the input gradient, the
    position form for the kernel gradient: all against the element loop."""
    x, w = RNG.normal(size=(2, 6, 5, 16)), RNG.normal(size=(3, 2, 16, 8))
    dn = ("NHWC", "HWIO", "NHWC")
    f = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME", rhs_dilation=(1, 2),  # noqa
                                              dimension_numbers=dn)
    dnums = lax.conv_dimension_numbers(x.shape, w.shape, dn)
    pads = lax.padtype_to_pads((6, 5), (3, 3), (1, 1), "SAME")
    np.testing.assert_allclose(np.asarray(f(x, w)),
                               loop_conv(x, w, (1, 1), pads, (1, 1), (1, 2), dnums),
                               rtol=1e-12, atol=1e-12)
    check_grads(f, (x, w), order=1, modes=("rev",))


def test_conv_is_scipy_correlation():
    x, w = RNG.normal(size=(1, 1, 7, 6)), RNG.normal(size=(1, 1, 3, 4))
    want = scipy.signal.correlate(x[0, 0], w[0, 0], mode="valid")
    np.testing.assert_allclose(np.asarray(lax.conv(x, w, (1, 1), "VALID"))[0, 0], want)
    full = lax.conv_with_general_padding(x, w, (1, 1), ((2, 2), (3, 3)), None, None)
    np.testing.assert_allclose(np.asarray(full)[0, 0],
                               scipy.signal.correlate(x[0, 0], w[0, 0], mode="full"))


@pytest.mark.parametrize("name", ["same_s2", "valid_s3", "explicit", "transpose_kernel",
                                  "consistent"])
def test_conv_transpose_matches_jax(name):
    kwargs = {"same_s2": dict(strides=(2, 2), padding="SAME"),
              "valid_s3": dict(strides=(3,), padding="VALID"),
              "explicit": dict(strides=(2, 1), padding=((1, 2), (0, 1))),
              "transpose_kernel": dict(strides=(2, 2), padding="SAME", transpose_kernel=True),
              "consistent": dict(strides=(2,), padding=((1, 1),), rhs_dilation=(2,),
                                 use_consistent_padding=True)}[name]
    lhs, rhs = REF[f"conv_transpose/{name}/lhs"], REF[f"conv_transpose/{name}/rhs"]
    got = lax.conv_transpose(lhs, rhs, **kwargs)
    np.testing.assert_allclose(np.asarray(got), REF[f"conv_transpose/{name}/out"], rtol=1e-12,
                               atol=1e-12)


def test_conv_transpose_with_transposed_kernel_is_the_gradient_of_conv():
    x, w = RNG.normal(size=(1, 6, 6, 2)), RNG.normal(size=(3, 3, 2, 3))
    dn = ("NHWC", "HWIO", "NHWC")
    y, pull = numbax.vjp(lambda v: lax.conv_general_dilated(v, w, (2, 2), "SAME",
                                                            dimension_numbers=dn), x)
    ct = RNG.normal(size=y.shape)
    got = lax.conv_transpose(ct, w, (2, 2), "SAME", dimension_numbers=dn, transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(pull(ct)[0]), rtol=1e-12)


def test_patches_and_local_match_jax():
    got = lax.conv_general_dilated_patches(REF["patches/x"], (2, 3), (1, 2), "SAME",
                                           rhs_dilation=(2, 1))
    np.testing.assert_allclose(np.asarray(got), REF["patches/out"], rtol=1e-12)
    got = lax.conv_general_dilated_local(REF["local/x"], REF["local/w"], (1, 1), "VALID", (3, 2),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.asarray(got), REF["local/out"], rtol=1e-12, atol=1e-12)


def test_patches_by_hand():
    x = np.arange(12.).reshape(1, 2, 6)
    got = np.asarray(lax.conv_general_dilated_patches(x, (3,), (3,), "VALID"))
    # feature c * 3 + k is channel c at window offset k
    want = np.stack([x[0, c, s + k] for c in range(2) for k in range(3) for s in (0, 3)])
    np.testing.assert_array_equal(got[0], want.reshape(6, 2))


@pytest.mark.parametrize("i", range(3))
def test_shape_helpers_match_jax(i):
    ls, rs, strides, padding, dn = [
        ((2, 9, 8, 3), (3, 2, 3, 5), (2, 3), "SAME", ("NHWC", "HWIO", "NHWC")),
        ((2, 3, 9, 8), (5, 3, 3, 2), (1, 2), "VALID", ("NCHW", "OIHW", "NCHW")),
        ((4, 7, 2), (3, 2, 6), (3,), ((1, 2),), ("NWC", "WIO", "NWC"))][i]
    assert lax.conv_general_shape_tuple(ls, rs, strides, padding, dn) == tuple(
        REF[f"shape/{i}/general"])
    assert lax.conv_transpose_shape_tuple(ls, rs, strides, padding, dn) == tuple(
        REF[f"shape/{i}/transpose"])
    perms = lax.conv_general_permutations(dn)
    np.testing.assert_array_equal(np.concatenate(perms), REF[f"shape/{i}/perms"])
    lhs_t, rhs_t = np.take(ls, perms[0]), np.take(rs, perms[1])
    assert lax.conv_shape_tuple(lhs_t, rhs_t, strides, padding) == tuple(
        REF[f"shape/{i}/canonical"])
    if isinstance(padding, str):
        for kind in ("SAME", "SAME_LOWER", "VALID"):
            np.testing.assert_array_equal(
                lax.padtype_to_pads(lhs_t[2:], rhs_t[2:], strides, kind),
                REF[f"shape/{i}/pads_{kind}"])
    # and the primitive agrees with the helper
    out = lax.conv_general_dilated(np.zeros(ls), np.zeros(rs), strides, padding,
                                   dimension_numbers=dn)
    assert out.shape == lax.conv_general_shape_tuple(ls, rs, strides, padding, dn)


def test_dimension_numbers_forms_agree():
    x, w = RNG.normal(size=(2, 5, 4, 3)), RNG.normal(size=(2, 2, 3, 4))
    strings = ("NHWC", "HWIO", "NHWC")
    dn = lax.conv_dimension_numbers(x.shape, w.shape, strings)
    assert isinstance(dn, lax.ConvDimensionNumbers)
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    a = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=strings)
    b = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    c = lax.conv_general_dilated(np.transpose(x, (0, 3, 1, 2)), np.transpose(w, (3, 2, 0, 1)),
                                 (1, 1), "SAME")
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_allclose(np.asarray(a), np.transpose(np.asarray(c), (0, 2, 3, 1)),
                               rtol=1e-12)


def test_preferred_element_type_and_int_inputs():
    x = RNG.integers(-3, 4, size=(1, 2, 5)).astype(np.int8)
    w = RNG.integers(-3, 4, size=(3, 2, 2)).astype(np.int8)
    got = lax.conv(x, w, (1,), "VALID", preferred_element_type=np.int32)
    assert got.dtype == np.int32
    want = loop_conv(x.astype(float), w.astype(float), (1,), ((0, 0),), (1,), (1,),
                     lax.conv_dimension_numbers(x.shape, w.shape, None))
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.int32))
    f32 = lax.conv(x.astype(np.float32), w.astype(np.float32), (1,), "VALID",
                   preferred_element_type=np.float64)
    assert f32.dtype == np.float64


def test_vmap_and_jit_of_a_grouped_conv():
    def f(x, w):
        return lax.conv_general_dilated(x, w, (2,), "SAME", rhs_dilation=(2,),
                                        dimension_numbers=("NWC", "WIO", "NWC"),
                                        feature_group_count=2)

    xs, ws = RNG.normal(size=(3, 2, 7, 4)), RNG.normal(size=(3, 3, 2, 6))
    for in_axes, args in (((0, 0), (xs, ws)), ((0, None), (xs, ws[0])),
                          ((None, 0), (xs[0], ws))):
        got = numbax.vmap(f, in_axes=in_axes)(*args)
        want = np.stack([np.asarray(f(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)]))
                         for i in range(3)])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(xs[0], ws[0])),
                               np.asarray(f(xs[0], ws[0])), rtol=1e-12)


def test_complex_convolution():
    x = RNG.normal(size=(1, 1, 6)) + 1j * RNG.normal(size=(1, 1, 6))
    w = RNG.normal(size=(1, 1, 3)) + 1j * RNG.normal(size=(1, 1, 3))
    got = np.asarray(lax.conv(x, w, (1,), "VALID"))[0, 0]
    np.testing.assert_allclose(got, scipy.signal.correlate(x[0, 0], np.conj(w[0, 0]), "valid"),
                               rtol=1e-12)


def test_bad_inputs():
    x, w = np.ones((1, 2, 5)), np.ones((3, 2, 2))
    with pytest.raises(NumbaxTypeError, match="dtype"):
        lax.conv(x, w.astype(np.float32), (1,), "VALID")
    with pytest.raises(NumbaxValueError, match="ranks"):
        lax.conv(np.ones((1, 2, 5, 5)), w, (1,), "VALID")
    with pytest.raises(NumbaxValueError, match="specs of length"):
        lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=lax.ConvDimensionNumbers(
            (0, 1, 2), (0, 1), (0, 1, 2)))
    with pytest.raises(NumbaxValueError, match="feature_group_count"):
        lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=2)
    with pytest.raises(NumbaxValueError, match="batch_group_count"):
        lax.conv_general_dilated(x, w, (1,), "VALID", batch_group_count=2)
    with pytest.raises(NumbaxValueError, match="window_strides"):
        lax.conv(x, w, (1, 1), "VALID")
    with pytest.raises(RuntimeError, match="padding"):  # JAX's class here
        lax.conv(x, w, (1,), "FULL")
    with pytest.raises(NumbaxValueError, match="transposed"):
        lax.conv_general_dilated(x, w, (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(NumbaxTypeError, match="dimension_numbers"):
        lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=("NCW", "OIW"))
    with pytest.raises(NumbaxTypeError, match="exactly once"):
        lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=("NCW", "OOW", "NCW"))
    with pytest.raises(NumbaxTypeError, match="preferred_element_type"):
        lax.conv(x, w, (1,), "VALID", preferred_element_type=np.int64)
    with pytest.raises(NumbaxValueError, match="precision"):
        lax.conv(x, w, (1,), "VALID", precision="extreme")
    with pytest.raises(NumbaxValueError, match="filter_shape"):
        lax.conv_general_dilated_patches(x, (2, 2), (1,), "VALID")
    with pytest.raises(NumbaxValueError, match="lhs has shape"):
        lax.conv_transpose(x, np.ones((2, 2)), (1,), "VALID")
    with pytest.raises(RuntimeError, match="expected 'VALID'"):
        lax.padtype_to_pads((4,), (2,), (1,), "CIRCULAR")


def test_precision_none_follows_the_default_matmul_precision():
    """As in JAX: a conv traced under jax_default_matmul_precision records it (the GPU's
    cuBLAS compute type follows); an explicit precision wins, and dot-algorithm presets leave
    convolutions at their default."""
    x, w = np.ones((1, 1, 3)), np.ones((1, 1, 2))

    def precision_of(**kw):
        jaxpr = numbax.make_jaxpr(lambda a, b: lax.conv(a, b, (1,), "VALID", **kw))(x, w)
        return jaxpr.eqns[0].params["precision"]

    assert precision_of() is None
    with numbax.default_matmul_precision("float32"):
        assert precision_of() == ("FLOAT32", "FLOAT32")
        assert precision_of(precision="default") == ("DEFAULT", "DEFAULT")
    with numbax.default_matmul_precision("F32_F32_F32"):
        assert precision_of() is None


@pytest.mark.parametrize("module", [convolution, conv_ops], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
