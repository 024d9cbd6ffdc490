"""Compiled CPU convolutions (compiler/cpu/runtime/conv.py, conv_kernels.py): jit against the
eager implementation over layouts, strides, every padding form, both dilations, feature and
batch groups and 1-D to 3-D, with both kernel forms forced on each configuration, on one
thread and several; gradients under jit; and the configurations that run eagerly instead."""
from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax._src.compiler.cpu.runtime import conv as cpu_conv
from numbax._src.compiler.cpu.runtime import conv_kernels as ck
from numbax._src.compiler.cpu.runtime import conv_patches
from numbax._src.compiler.cpu.runtime.gemm_operands import read_only
from numbax._src.config import config
from numbax._src.lax import convolution

RNG = np.random.default_rng(18)

# name -> (lhs shape, rhs shape, kwargs of conv_general_dilated)
CONFIGS = {
    "nhwc_same": ((2, 7, 9, 5), (3, 3, 5, 4),
                  dict(window_strides=(1, 1), padding="SAME",
                       dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "nhwc_valid_wide": ((2, 15, 17, 8), (3, 3, 8, 40),
                        dict(window_strides=(1, 1), padding="VALID",
                             dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "nchw_same_lower": ((2, 5, 13, 14), (8, 5, 4, 3),
                        dict(window_strides=(1, 1), padding="SAME_LOWER")),
    "strided_explicit": ((2, 17, 19, 16), (3, 3, 16, 33),
                         dict(window_strides=(2, 3), padding=((1, 0), (2, 1)),
                              dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "negative_padding": ((2, 3, 11, 12), (4, 3, 3, 3),
                         dict(window_strides=(1, 2), padding=((-1, 2), (1, -2)))),
    "both_dilations": ((2, 17, 19, 6), (3, 2, 6, 7),
                       dict(window_strides=(1, 2), padding=((1, 0), (2, 1)),
                            lhs_dilation=(2, 1), rhs_dilation=(1, 2),
                            dimension_numbers=("NHWC", "HWIO", "NCHW"))),
    "feature_groups": ((3, 6, 13, 11), (8, 3, 3, 3),
                       dict(window_strides=(1, 1), padding="SAME", feature_group_count=2)),
    "depthwise": ((2, 9, 4), (3, 1, 4),
                  dict(window_strides=(1,), padding="SAME_LOWER",
                       dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=4)),
    "depthwise_multiplier": ((2, 11, 10, 6), (3, 2, 1, 18),
                             dict(window_strides=(2, 1), padding="SAME", rhs_dilation=(1, 2),
                                  dimension_numbers=("NHWC", "HWIO", "NCHW"),
                                  feature_group_count=6)),
    # fewer than conv_kernels.DIRECT_POSITIONS_BELOW channels: the direct loop over positions
    "one_channel_lines": ((6, 1, 40), (1, 1, 9), dict(window_strides=(1,), padding="SAME")),
    "one_channel_strided": ((5, 1, 41), (1, 1, 5),
                            dict(window_strides=(3,), padding=((2, 1),), rhs_dilation=(2,))),
    # lines longer than conv_kernels.DIRECT_SEGMENT: several units a line, the last partial;
    # taps in fours and a remainder (jnp.convolve of one long signal)
    "one_channel_long": ((2, 1, 5000), (1, 1, 7), dict(window_strides=(1,), padding="SAME")),
    "one_channel_long_strided": ((1, 1, 4500), (1, 1, 6),
                                 dict(window_strides=(2,), padding=((3, 2),))),
    "few_channels_multiplier": ((2, 13, 2), (3, 1, 6),
                                dict(window_strides=(1,), padding="VALID",
                                     dimension_numbers=("NWC", "WIO", "NWC"),
                                     feature_group_count=2)),
    "batch_groups": ((4, 6, 17, 19), (8, 6, 3, 3),
                     dict(window_strides=(1, 1), padding="SAME", rhs_dilation=(2, 2),
                          batch_group_count=2)),
    "batch_groups_odd_layout": ((3, 6, 12), (2, 6, 3),
                                dict(window_strides=(2,), padding=((1, 0),),
                                     dimension_numbers=("CNW", "WOI", "WNC"),
                                     batch_group_count=3)),
    "conv1d": ((3, 6, 17), (8, 6, 3), dict(window_strides=(1,), padding=((1, 1),))),
    "conv3d": ((2, 7, 8, 9, 3), (3, 2, 3, 3, 5),
               dict(window_strides=(1, 1, 2), padding=((1, 1), (0, 1), (2, 0)),
                    dimension_numbers=("NDHWC", "DHWIO", "NCDHW"))),
    # a kernel gradient's shape: few outputs, a long window, batch and feature roles swapped
    "kernel_gradient": ((16, 9, 10, 24), (16, 9, 10, 40),
                        dict(window_strides=(1, 1), padding=((1, 1), (1, 1)),
                             dimension_numbers=("CHWN", "IHWO", "HWNC"))),
    # a first layer's kernel gradient: one batch row (the input channel), few outputs, a long
    # window (conv_patches.py), and a strided, dilated one in two rows
    "kernel_gradient_one_row": ((1, 32, 20, 19), (16, 32, 20, 19),
                                dict(window_strides=(1, 1), padding=((1, 1), (1, 0)))),
    "few_positions_dilated": ((2, 3, 9, 8), (4, 3, 3, 3),
                              dict(window_strides=(2, 2), padding=((1, 1), (0, 1)),
                                   lhs_dilation=(1, 2), rhs_dilation=(2, 1))),
    "kernel_gradient_dilated": ((14, 11, 10, 13), (14, 5, 4, 33),
                                dict(window_strides=(1, 1), padding=((1, 0), (1, 1)),
                                     rhs_dilation=(2, 2),
                                     dimension_numbers=("CHWN", "IHWO", "HWNC"))),
}


def _operands(name, dtype):
    lhs_shape, rhs_shape, kwargs = CONFIGS[name]
    x = RNG.normal(size=lhs_shape).astype(dtype)
    w = RNG.normal(size=rhs_shape).astype(dtype)
    return x, w, kwargs


def _params(x, w, kwargs):
    """conv_general_dilated_p's params for these operands (as lax's wrapper binds them)."""
    f = numbax.jit(lambda x, w: lax.conv_general_dilated(x, w, **kwargs))
    (eqn,) = [e for e in f.lower(x, w).jaxpr.eqns if e.primitive.name == "conv_general_dilated"]
    return eqn.params


def _close(got, want, dtype):
    scale = max(1.0, float(np.abs(want).max()))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=tol * scale)


def _eager_calls(text: str) -> int:
    """Host calls in a driver's source: eager implementations run between kernels."""
    return len(re.findall(r"= h\d+\(", text))


def _runtime_args(params):
    return tuple(params[k] for k in ("window_strides", "padding", "lhs_dilation",
                                      "rhs_dilation", "dimension_numbers",
                                      "feature_group_count", "batch_group_count"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_jit_matches_eager_and_runs_compiled(name, dtype):
    x, w, kwargs = _operands(name, dtype)
    f = numbax.jit(lambda x, w: lax.conv_general_dilated(x, w, **kwargs))
    want = np.asarray(lax.conv_general_dilated(x, w, **kwargs))
    got = f(x, w)
    assert got.dtype == want.dtype and got.shape == want.shape
    _close(got, want, dtype)
    assert "cv.conv_general_dilated(" in f.lower(x, w).as_text()


# CI's fast path keeps two threaded configurations (the direct loop's threads:
# test_direct_units_split_one_long_line_with_the_same_bits); each parallel loop costs seconds
# to compile
@pytest.mark.parametrize("name,threads", [(name, 1) for name in sorted(CONFIGS)] + [
    ("batch_groups", 3), ("strided_explicit", 4)] + [
    pytest.param(name, threads, marks=pytest.mark.slow) for name, threads in (
        ("kernel_gradient", 3), ("conv3d", 2), ("depthwise_multiplier", 2), ("nhwc_same", 3),
        ("one_channel_long", 3), ("depthwise", 2), ("nhwc_valid_wide", 2))])
def test_both_forms_on_every_configuration(name, threads):
    """Output tiles, window lines and the direct loop, each forced where it applies, against
    eager (the cost model picks one); threads split tiles and lines into chunks, and window
    lines into per-thread sums; a padded channels-last input's grid is filled row by row on
    the threads."""
    x, w, kwargs = _operands(name, np.float64)
    params = _params(x, w, kwargs)
    want = convolution._conv_general_dilated_impl(x, w, **params)[0]
    args = (x.shape, w.shape, x.dtype, *_runtime_args(params))
    cv = cpu_conv.plan(*args)[0]
    forms = [(cpu_conv._tile_plan(cv), cpu_conv._run_tiles),
             (cpu_conv._line_plan(cv), cpu_conv._run_lines),
             (cpu_conv._direct_plan(cv), cpu_conv._run_direct),
             (conv_patches.patch_cost(cv, 1.0) and conv_patches.patch_plan(cv, 1.0),
              conv_patches.run_patches)]
    ran = 0
    for plan, run in forms:
        if plan is None:
            continue
        out, _ = run(cv, plan, x, w, threads)  # channels-last (N, out..., O)
        d = cv.d
        got = np.transpose(np.moveaxis(out, d + 1, 1), np.argsort(cv.specs[2]))
        _close(got, want, np.float64)
        ran += 1
    assert ran >= 1


def test_direct_units_split_one_long_line_with_the_same_bits():
    """One signal is one line: its segments are the units threads share, and each output
    adds its taps in order however the units fall (against float64 numpy)."""
    x, w, kwargs = _operands("one_channel_long", np.float32)
    params = _params(x, w, kwargs)
    cv = cpu_conv.plan(x.shape, w.shape, x.dtype, *_runtime_args(params))[0]
    plan = cpu_conv._direct_plan(cv)
    assert ck.direct_units(plan.lines, plan.width, 1) == 2 * -(-5000 // ck.DIRECT_SEGMENT)
    one, _ = cpu_conv._run_direct(cv, plan, x, w, 1)
    one = one.copy()  # (a pooled buffer)
    out = np.empty_like(one).reshape(-1, 1)
    grid = cpu_conv._grid(cv, plan, x, 1)
    taps = read_only(np.ascontiguousarray(w[0, 0, :, None]))
    ck.direct_threads(grid, plan.lines, plan.step, plan.width, plan.toff, plan.mult, taps,
                      out, 3)
    np.testing.assert_array_equal(out.reshape(one.shape), one)
    want = np.stack([np.convolve(row, w[0, 0, ::-1].astype(np.float64), "same")
                     for row in x[:, 0].astype(np.float64)])
    _close(one[..., 0], want, np.float32)


def test_the_cost_model_picks_each_form_for_its_shape_class():
    for name, kind in (("kernel_gradient", cpu_conv.LinePlan), ("nhwc_same", cpu_conv.TilePlan),
                       ("strided_explicit", cpu_conv.TilePlan),
                       ("depthwise_multiplier", cpu_conv.DirectPlan),
                       ("kernel_gradient_one_row", conv_patches.PatchPlan)):
        x, w, kwargs = _operands(name, np.float32)
        params = _params(x, w, kwargs)
        cv, chosen = cpu_conv.plan(x.shape, w.shape, x.dtype, *_runtime_args(params))
        assert isinstance(chosen, kind), name
        assert cpu_conv._tile_plan(cv) is not None


def test_threaded_runs_match():
    x, w, kwargs = _operands("nhwc_valid_wide", np.float32)
    f = numbax.jit(lambda x, w: lax.conv_general_dilated(x, w, **kwargs))
    want = np.asarray(lax.conv_general_dilated(x, w, **kwargs))
    old = config.cpu_threads
    try:
        config.update("cpu_threads", 2)
        _close(f(x, w), want, np.float32)
    finally:
        config.update("cpu_threads", old)


@pytest.mark.parametrize("name", ["nhwc_same", "strided_explicit", "feature_groups",
                                  "both_dilations", "conv3d"])
def test_gradients_under_jit_run_compiled(name):
    """The input and kernel gradients (convolutions with lhs dilation, swapped roles and
    group counts) run on the compiled kernels and give eager's values."""
    x, w, kwargs = _operands(name, np.float64)
    ct = RNG.normal(size=np.shape(lax.conv_general_dilated(x, w, **kwargs)))

    def loss(x, w):
        return numbax.numpy.sum(lax.conv_general_dilated(x, w, **kwargs) * ct)

    grad = numbax.grad(loss, argnums=(0, 1))
    want = grad(x, w)
    got = numbax.jit(grad)(x, w)
    for g, e in zip(got, want):
        _close(g, np.asarray(e), np.float64)
    text = numbax.jit(grad).lower(x, w).as_text()
    assert text.count("cv.conv_general_dilated(") == 2 and _eager_calls(text) == 0


def test_bias_relu_convnet_layer_under_jit():
    """A stax-style layer (conv + bias + relu) and its SGD step, jit vs eager."""
    from numbax.example_libraries import stax

    init, apply = stax.serial(stax.Conv(8, (3, 3), padding="SAME"), stax.Relu,
                              stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(3))
    _, params = init(numbax.random.PRNGKey(0), (-1, 8, 8, 2))
    params = numbax.tree_util.tree_map(lambda p: np.asarray(p, np.float32), params)
    x = RNG.normal(size=(4, 8, 8, 2)).astype(np.float32)

    def loss(ps):
        return numbax.numpy.sum(apply(ps, x) ** 2)

    want = numbax.grad(loss)(params)
    got = numbax.jit(numbax.grad(loss))(params)
    for g, e in zip(numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want)):
        _close(g, np.asarray(e), np.float32)


@pytest.mark.parametrize("dtype,pref", [(np.int32, None), (np.int8, np.int32),
                                        (np.complex64, None), (np.float16, None)])
def test_other_dtypes_run_eagerly_under_jit(dtype, pref):
    x = RNG.normal(size=(2, 3, 6, 5)) * 3
    w = RNG.normal(size=(4, 3, 3, 2)) * 3
    if np.dtype(dtype).kind == "c":
        x, w = x + 1j * x[::-1], w - 2j * w
    x, w = x.astype(dtype), w.astype(dtype)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", preferred_element_type=pref)

    want = np.asarray(f(x, w))
    got = numbax.jit(f)(x, w)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3 if dtype == np.float16 else 0)
    text = numbax.jit(f).lower(x, w).as_text()
    assert "cv.conv_general_dilated(" not in text and _eager_calls(text) == 1


def test_preferred_float64_of_float32_operands_runs_compiled():
    x, w, kwargs = _operands("nhwc_same", np.float32)

    def f(x, w):
        return lax.conv_general_dilated(x, w, preferred_element_type=np.float64, **kwargs)

    got = numbax.jit(f)(x, w)
    assert got.dtype == np.float64
    _close(got, np.asarray(f(x, w)), np.float64)
    assert "cv.conv_general_dilated(" in numbax.jit(f).lower(x, w).as_text()


def test_empty_operands_run_eagerly():
    x, w = np.zeros((0, 3, 5, 5), np.float32), RNG.normal(size=(4, 3, 3, 3)).astype(np.float32)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME")

    assert numbax.jit(f)(x, w).shape == (0, 4, 5, 5)
    text = numbax.jit(f).lower(x, w).as_text()
    assert "cv.conv_general_dilated(" not in text and _eager_calls(text) == 1


def test_pooled_buffers_never_overwrite_a_result_the_caller_holds():
    """Grids and outputs of 8 MB and more are reused only once nothing refers to them."""
    kwargs = dict(window_strides=(1, 1), padding="SAME",
                  dimension_numbers=("NHWC", "HWIO", "NHWC"))
    w = RNG.normal(size=(3, 1, 64, 64)).astype(np.float32)
    xs = [RNG.normal(size=(8, 64, 64, 64)).astype(np.float32) for _ in range(3)]
    f = numbax.jit(lambda x, w: lax.conv_general_dilated(x, w, **kwargs))
    wants = [np.asarray(lax.conv_general_dilated(x, w, **kwargs)) for x in xs]
    params = _params(xs[0], w, kwargs)
    _, chosen = cpu_conv.plan(xs[0].shape, w.shape, xs[0].dtype, *_runtime_args(params))
    first = f(xs[0], w)
    second = f(xs[1], w)  # the first result is held: a fresh output
    held = chosen.outs[-1]
    assert not np.shares_memory(np.asarray(first), np.asarray(second))
    _close(first, wants[0], np.float32)
    del first
    third = f(xs[2], w)
    _close(second, wants[1], np.float32)
    _close(third, wants[2], np.float32)
    assert len(chosen.grids) == 1 and chosen.outs[-1] is not held
    free = id(chosen.outs[-1])  # (a reference would keep it busy)
    del third  # now nothing holds the last output: the next call writes into it
    fourth = f(xs[0], w)
    assert id(chosen.outs[-1]) == free
    assert np.shares_memory(np.asarray(fourth), chosen.outs[-1])
    _close(fourth, wants[0], np.float32)
    _close(second, wants[1], np.float32)
