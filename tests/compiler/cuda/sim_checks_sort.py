"""Checks of the GPU sort variants (compiler/cuda_sort.py) under the CUDA simulator.

The simulator's Config (threads=32) makes the tile 32 elements, so rows of up to 4 take the
one-thread-per-row kernel, rows of 5..32 the shared-memory block kernel and longer rows the
tile + merge-path passes. numpy's stable sort/argsort and the CPU backend are the truth."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cuda.kernels import sort as cuda_sort
from numbax._src.compiler.cuda.loops import Config
from tests.compiler.cuda.sim_checks import check, close, gjit

RNG = np.random.default_rng(10)
LAX = numbax.lax
SIM = Config(sim=True)


def _keys(shape, dtype, nan=True):
    """Few distinct values (many ties), NaNs, infinities and signed zeros for floats."""
    if np.dtype(dtype) == np.bool_:
        return RNG.integers(0, 2, shape).astype(np.bool_)
    x = RNG.integers(-3, 4, shape).astype(np.float64)
    if np.dtype(dtype).kind == "f":
        flat = x.reshape(-1)
        m = flat.size
        if nan and m:
            flat[RNG.integers(0, m, max(1, m // 7))] = np.nan
        if m > 4:
            flat[:4] = [np.inf, -np.inf, -0.0, 0.0][: m]
    return x.astype(dtype)


def _check_sort(x, axis):
    """sort and stable argsort (sort of (x, iota)) against numpy and the CPU backend."""
    got = gjit(lambda a: jnp.sort(a, axis=axis))(x)
    close(got, np.sort(x, axis=axis, kind="stable"), rtol=0)
    iota = np.broadcast_to(
        np.arange(x.shape[axis]).reshape([-1 if d == axis % x.ndim else 1
                                          for d in range(x.ndim)]), x.shape).astype(np.int32)
    f = lambda a, b: LAX.sort((a, b), dimension=axis % x.ndim, num_keys=1)  # noqa: E731
    vals, idx = gjit(f)(x, iota)
    close(idx, np.argsort(x, axis=axis, kind="stable").astype(np.int32), rtol=0)
    for got, want in zip((vals, idx), numbax.jit(f, backend="cpu")(x, iota), strict=True):
        close(got, np.asarray(want), rtol=0)
    # signed zeros compare equal, so the sorted values' bits follow the stable permutation
    want = np.take_along_axis(x, np.argsort(x, axis=axis, kind="stable"), axis)
    assert np.array_equal(np.signbit(np.asarray(vals)), np.signbit(want))


@check
def sort_variants():
    seen = set()
    for n in (1, 3, 4, 5, 17, 32, 33, 70, 200):
        seen.add(cuda_sort.variant(n, SIM))
        for dt in (np.float32, np.float64):
            _check_sort(_keys((3, n), dt), axis=1)
    _check_sort(_keys(200, np.float32), axis=0)  # one row
    assert seen == {"rowwise", "block", "merge"}, seen


@check
def sort_int_bool_keys():
    for dt in (np.int32, np.int64, np.uint8, np.int8, np.bool_):
        for n in (4, 20, 90):
            _check_sort(_keys((2, n), dt), axis=1)


@check
def sort_inner_axis():
    """Rows strided by inner > 1: axis 0 of 2-d arrays and the middle axis of a 3-d one."""
    for shape in ((3, 5), (20, 3), (100, 2)):
        _check_sort(_keys(shape, np.float32), axis=0)
    _check_sort(_keys((2, 45, 3), np.float32), axis=1)
    _check_sort(_keys((2, 12, 3), np.int32), axis=1)


@check
def sort_multi_operand():
    """num_keys=2 (float then int, int then bool), a payload operand, every variant."""
    for n in (4, 23, 100):
        k0 = _keys((2, n), np.float32)
        k1 = RNG.integers(0, 4, (2, n)).astype(np.int32)
        kb = _keys((2, n), np.bool_)
        pay = RNG.standard_normal((2, n))
        pos = np.broadcast_to(np.arange(n), (2, n)).astype(np.int64)
        for ops, nk in (((k0, k1, pay, pos), 2), ((k1, kb, pos), 2), ((kb, k0, pos), 1),
                        ((k0, k1, pos), 1)):
            f = lambda *a, nk=nk: LAX.sort(a, dimension=1, num_keys=nk)  # noqa: E731
            want = numbax.jit(f, backend="cpu")(*ops)
            for got, w in zip(gjit(f)(*ops), want, strict=True):
                close(got, np.asarray(w), rtol=0)
            # the position operand: numpy's lexsort by the keys in turn, NaNs after numbers
            order = [_lex([k[r] for k in ops[:nk]]) for r in range(2)]
            np.testing.assert_array_equal(np.asarray(gjit(f)(*ops)[-1]), np.array(order))


def _lex(keys):
    cols = []  # np.lexsort: the last column is the primary key
    for k in reversed(keys):
        nan = np.isnan(k) if k.dtype.kind == "f" else np.zeros(k.shape, bool)
        cols += [np.where(nan, 0, k), nan]
    return np.lexsort(cols)


@check
def sort_edge_shapes():
    for shape, axis in (((4, 0), 1), ((0, 5), 1), ((5, 1), 1), ((1,), 0), ((0,), 0),
                        ((2, 2), 1), ((1, 33), 1)):
        x = _keys(shape, np.float32)
        close(gjit(lambda a, axis=axis: jnp.sort(a, axis=axis))(x), np.sort(x, axis=axis),
              rtol=0)
    x = _keys((2, 40), np.float32)  # is_stable=False: numbax's sort is stable either way
    f = lambda a, b: LAX.sort((a, b), dimension=1, is_stable=False, num_keys=1)  # noqa: E731
    pos = np.broadcast_to(np.arange(40), (2, 40)).astype(np.int32)
    close(gjit(f)(x, pos)[1], np.argsort(x, axis=1, kind="stable").astype(np.int32), rtol=0)
