"""Compiled CPU windowed reductions (compiler/cpu/runtime/windows.py): reduce_window's
sum/max/min, max pooling's gradient (select_and_scatter_add) and its jvp
(select_and_gather_add) under jit, bit for bit against the eager implementation, over layouts,
strides, padding, window dilation, overlapping windows, ties and NaNs, on one thread and
several; and the configurations that run eagerly instead."""
from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import windows
from numbax._src.config import config

RNG = np.random.default_rng(19)

# name -> (operand shape, window_dimensions, window_strides, padding, window_dilation)
WINDOWS = {
    "nhwc_pool": ((3, 8, 10, 5), (1, 2, 2, 1), (1, 2, 2, 1), "VALID", None),
    "nhwc_same_overlapping": ((2, 9, 7, 4), (1, 3, 3, 1), (1, 2, 2, 1), "SAME", None),
    "nchw_pool": ((2, 3, 9, 8), (1, 1, 3, 2), (1, 1, 2, 2), ((0, 0), (0, 0), (1, 1), (0, 1)),
                  None),
    "window_dilation": ((2, 11, 10, 3), (1, 2, 3, 1), (1, 1, 2, 1), "VALID", (1, 3, 2, 1)),
    "one_d": ((4, 13), (1, 4), (1, 3), ((0, 0), (2, 1)), None),
    "three_d": ((2, 6, 7, 8, 2), (1, 2, 3, 2, 1), (1, 2, 1, 2, 1), "SAME", None),
    "batch_window": ((6, 5, 4), (3, 2, 1), (2, 1, 1), "VALID", None),
    # stride 1 along the row: each tap one contiguous run (average pooling's gradient is this
    # over the interior-padded cotangent), channels first and last, cropped by the padding
    "nchw_stride_one": ((2, 3, 9, 11), (1, 1, 3, 3), (1, 1, 1, 1), ((0, 0), (0, 0), (2, 0),
                                                                   (1, 2)), None),
    "nhwc_stride_one_same": ((2, 7, 6, 5), (1, 3, 2, 1), (1, 1, 1, 1), "SAME", None),
    # channels enough for max pooling's masked channel loops (windows.CHANNELS_MIN)
    "nhwc_many_channels": ((2, 7, 8, 11), (1, 3, 3, 1), (1, 2, 2, 1), "SAME", None),
    # one channel (a channels-first image) runs in bands of phased planes
    # (windows.PHASE_BAND): a stride of 3 with dilation and uneven padding; a plane of two
    # bands with runs long enough for whole copy chunks; a 3-D window with its depth
    "nchw_stride_three_dilated": ((2, 2, 11, 13), (1, 1, 2, 3), (1, 1, 3, 3),
                                  ((0, 0), (0, 0), (1, 2), (2, 0)), (1, 1, 2, 2)),
    "nchw_two_bands": ((1, 2, 230, 70), (1, 1, 3, 3), (1, 1, 2, 2), "SAME", None),
    "ncdhw_three_d": ((2, 1, 5, 6, 7), (1, 1, 3, 2, 3), (1, 1, 2, 1, 2), "SAME", None),
}


def _operand(shape, dtype=np.float32):
    x = RNG.normal(size=shape).astype(dtype)
    if dtype != np.int32:
        flat = x.reshape(-1)
        ties = len(flat[1::7])
        flat[:7 * ties:7] = flat[1::7]  # ties inside windows
        flat[5] = np.nan
    return x


def _eager_calls(text: str) -> int:
    return len(re.findall(r"= h\d+\(", text))


def _same(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _pools(spec):
    _, dims, strides, padding, wdil = spec

    def max_pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, dims, strides, padding,
                                 window_dilation=wdil)

    def min_pool(x):
        return lax.reduce_window(x, jnp.inf, lax.min, dims, strides, padding,
                                 window_dilation=wdil)

    def sum_pool(x):
        return lax.reduce_window(x, 0.0, lax.add, dims, strides, padding, window_dilation=wdil)

    return max_pool, min_pool, sum_pool


# threads: the parallel loops on two layouts (each parallel loop costs seconds to compile)
@pytest.mark.parametrize("name,threads", [(name, 1) for name in sorted(WINDOWS)] + [
    pytest.param("nhwc_same_overlapping", 2, marks=pytest.mark.slow), ("batch_window", 2)])
def test_reductions_and_max_pool_derivatives_match_eager(name, threads):
    spec = WINDOWS[name]
    x = _operand(spec[0])
    max_pool, min_pool, sum_pool = _pools(spec)
    t = RNG.normal(size=x.shape).astype(np.float32)

    def max_grad(x):  # select_and_scatter_add (the derivative of max over a window)
        return numbax.grad(lambda x: jnp.sum(jnp.nan_to_num(max_pool(x)) * 3.0))(x)

    def min_jvp(x, t):  # select_and_gather_add
        return numbax.jvp(min_pool, (x,), (t,))[1]

    old = config.cpu_threads
    try:
        config.update("cpu_threads", threads)
        # reverse mode through window dilation is not defined (nor in JAX)
        calls = [(max_pool, (x,)), (min_pool, (x,)), (sum_pool, (x,)), (min_jvp, (x, t))]
        calls += [(max_grad, (x,))] if spec[4] is None else []
        for f, args in calls:
            _same(numbax.jit(f)(*args), f(*args))
    finally:
        config.update("cpu_threads", old)
    text = "".join(numbax.jit(f).lower(*a).as_text() for f, a in calls)
    assert "wk.reduce_window(" in text and "wk.select_and_gather_add(" in text
    assert ("wk.select_and_scatter_add(" in text) == (spec[4] is None)
    assert _eager_calls(text) == 0


def test_max_pool_gradient_routes_ties_and_nans_as_eager():
    """Each window's cotangent goes to its first maximum; a NaN is the maximum's value but the
    selection moves on only to strictly greater candidates (eager's rule)."""
    x = np.array([[1.0, 3.0, 3.0, 2.0, np.nan, 5.0, -np.inf, -np.inf]], np.float32)

    def f(x):
        pool = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2), (1, 2), "VALID")
        return numbax.grad(lambda x: jnp.sum(jnp.nan_to_num(pool) * 0 + lax.reduce_window(
            x, -jnp.inf, lax.max, (1, 2), (1, 2), "VALID") * jnp.arange(1.0, 5.0)))(x)

    want = f(x)
    _same(numbax.jit(f)(x), want)


def test_integer_windows_compile():
    x = RNG.integers(-50, 50, size=(2, 6, 6, 3)).astype(np.int32)
    for f in (lambda x: lax.reduce_window(x, np.int32(-2**31), lax.max, (1, 2, 2, 1),
                                          (1, 2, 2, 1), "VALID"),
              lambda x: lax.reduce_window(x, np.int32(0), lax.add, (1, 3, 3, 1),
                                          (1, 1, 1, 1), "SAME")):
        _same(numbax.jit(f)(x), f(x))
        assert "wk.reduce_window(" in numbax.jit(f).lower(x).as_text()
    planes = x.transpose(0, 3, 1, 2).copy()  # channels first: one channel's phased planes
    for reducer, init in ((lax.max, np.int32(-2**31)), (lax.add, np.int32(0))):
        def g(x, reducer=reducer, init=init):
            return lax.reduce_window(x, init, reducer, (1, 1, 3, 3), (1, 1, 2, 2), "SAME")
        _same(numbax.jit(g)(planes), g(planes))


@pytest.mark.parametrize("step", [1, 2, 3])
def test_copy_run_covers_every_length(step):
    """`_copy_run`'s overlapping chunks, half chunks and element loop: every length up to
    three chunks, against numpy's strided copy; nothing outside the run is written."""
    src = np.arange(200, dtype=np.float32)
    for n in range(3 * windows.COPY_CHUNK + 1):
        dst = np.full(60, -1.0, np.float32)
        windows._copy_run(dst, 5, src, 7, n, step)
        want = np.full(60, -1.0, np.float32)
        want[5:5 + n] = src[7:7 + n * step:step]
        _same(dst, want)


@pytest.mark.parametrize("kwargs", [
    dict(base_dilation=(1, 2, 1, 1)),  # base dilation
    dict(padding=((0, 0), (-1, 1), (0, 0), (0, 0))),  # negative padding
])
def test_other_layouts_run_eagerly(kwargs):
    x = _operand((2, 7, 6, 3))
    args = dict(window_dimensions=(1, 2, 2, 1), window_strides=(1, 1, 2, 1), padding="VALID")
    args.update(kwargs)

    def f(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, **args)

    _same(numbax.jit(f)(x), f(x))
    text = numbax.jit(f).lower(x).as_text()
    assert "wk." not in text and _eager_calls(text) == 1


def test_boolean_windows_run_eagerly():
    x = RNG.normal(size=(3, 6, 6)) > 0

    def f(x):
        return lax.reduce_window(x, False, lax.bitwise_or, (1, 2, 2), (1, 2, 2), "VALID")

    _same(numbax.jit(f)(x), f(x))
    assert "wk." not in numbax.jit(f).lower(x).as_text()


def test_layout_merges_unwindowed_dimensions():
    lay = windows.layout((2, 3, 9, 8), (1, 1, 3, 2), (1, 1, 2, 2), ((0, 0),) * 4, (1,) * 4,
                         (1,) * 4)
    assert lay.operand == (6, 1, 9, 8, 1) and lay.out == (6, 1, 4, 4, 1)
    lay = windows.layout((4, 9, 9, 16), (1, 2, 2, 1), (1, 2, 2, 1), ((0, 0),) * 4, (1,) * 4,
                         (1,) * 4)
    assert lay.operand == (4, 1, 9, 9, 16) and lay.disjoint
    assert windows.layout((2, 3, 4, 5, 6), (2, 2, 2, 2, 1), (1,) * 5, ((0, 0),) * 5,
                          (1,) * 5, (1,) * 5) is None  # four windowed dimensions
