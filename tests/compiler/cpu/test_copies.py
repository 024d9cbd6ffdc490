"""Large copies on Numba's threads (cpu/runtime/copies.py) and the library rules that use them
(concatenate, pad, slice, rev, dynamic_update_slice, scatter's copy): numpy's results, bit for
bit, on every layout."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import copies, library
from numbax._src.compiler.cpu.runtime import threads as rt_threads

RNG = np.random.default_rng(7)


@pytest.fixture
def two_threads():
    """Every copy big enough for threads at all gets two (config.cpu_threads), so the parallel
    path runs on this machine whatever its load."""
    with numbax.config.override("cpu_threads", 2):
        yield


def _layouts():
    base = RNG.standard_normal((6, 40, 300)).astype(np.float32)
    return {
        "contiguous": base,
        "rows sliced": base[1:5, 3:37, :],
        "last axis sliced": base[:, :, 10:290],
        "strided outer": base[::2, ::3],
        "reversed outer": base[::-1, ::-1],
        "axes swapped, last kept": base.transpose(1, 0, 2),
        "transposed (short runs)": base.transpose(2, 1, 0),
        "reversed last (short runs)": base[..., ::-1],
        "int8": RNG.integers(-100, 100, (50, 700)).astype(np.int8)[:, 3:600],
        "complex128": (base + 1j * base).astype(np.complex128)[:, ::2],
        "one long row": RNG.standard_normal(300_000),
        "empty": base[:, :0],
    }


@pytest.mark.parametrize("name", list(_layouts()))
def test_copy_is_numpys(name, two_threads):
    src = _layouts()[name]
    out = copies.copy(src)
    assert out.flags.c_contiguous and out.dtype == src.dtype
    np.testing.assert_array_equal(out, src)


@pytest.mark.parametrize("name", list(_layouts()))
def test_copy_into_a_strided_destination(name, two_threads):
    src = _layouts()[name]
    big = np.zeros((src.shape[0] + 3, *src.shape[1:-1], src.shape[-1] + 5), src.dtype) \
        if src.ndim >= 2 else np.zeros(src.shape[0] + 8, src.dtype)
    place = (slice(2, 2 + src.shape[0]), *(slice(None),) * (src.ndim - 2),
             *((slice(4, 4 + src.shape[-1]),) if src.ndim >= 2 else ()))
    want = big.copy()
    want[place] = src
    copies.copy_into(big[place], src)
    np.testing.assert_array_equal(big, want)  # nothing outside the place is touched


def test_runs_are_the_trailing_axes_contiguous_in_both():
    a = np.zeros((4, 5, 100), np.float32)
    run, dst_offsets, src_offsets = copies.runs(a, a)
    assert run == a.nbytes and list(dst_offsets) == [0] == list(src_offsets)
    view = a[:, 1:4]  # three consecutive rows of 400 bytes in each block of 2000
    run, dst_offsets, src_offsets = copies.runs(np.empty(view.shape, np.float32), view)
    assert run == 1200
    np.testing.assert_array_equal(src_offsets, np.arange(4) * 2000)
    np.testing.assert_array_equal(dst_offsets, np.arange(4) * 1200)
    view = a[:, ::2]  # every other row: runs of one row
    run, dst_offsets, src_offsets = copies.runs(np.empty(view.shape, np.float32), view)
    assert run == 400
    np.testing.assert_array_equal(src_offsets, [i * 2000 + j * 800 for i in range(4)
                                                for j in range(3)])
    np.testing.assert_array_equal(dst_offsets, np.arange(12) * 400)
    assert copies.runs(a.T.copy(), a.T) is None  # runs of one element: numpy copies it


def test_long_runs_are_cut_so_every_thread_has_some(monkeypatch, two_threads):
    """One run of 2.4 MB: cut into pieces (a thread each), the copy still whole and exact."""
    calls = []
    kernel = copies._copy_runs
    monkeypatch.setattr(copies, "_copy_runs", lambda *a: (calls.append(a[4:]), kernel(*a)))
    src = RNG.standard_normal(300_000)
    out = copies.copy(src)
    np.testing.assert_array_equal(out, src)
    (run, piece), = calls
    assert run == src.nbytes and copies.PIECE_BYTES <= piece < run


def test_small_copies_stay_numpys(monkeypatch):
    monkeypatch.setattr(copies, "_copy_runs", lambda *a: pytest.fail("threads for 4 KB"))
    src = np.arange(1000.0).reshape(10, 100)[:, ::-1]
    with numbax.config.override("cpu_threads", 0):
        np.testing.assert_array_equal(copies.copy(src), src)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64])
def test_transposes_run_in_tiles_on_any_thread_count(dtype, threads, monkeypatch):
    """Whole tiles and the edge's (200 and 181 are not multiples of the tile), every item
    size, a 3-d permutation keeping its first axis; on one thread too."""
    calls = []
    tiles = copies._copy_tiles
    monkeypatch.setattr(copies, "_copy_tiles", lambda *a: (calls.append(1), tiles(*a)))
    base = (RNG.standard_normal((3, 200, 181)) * 50).astype(dtype)
    with numbax.config.override("cpu_threads", threads):
        for src in (base[1].T, base.transpose(0, 2, 1), base.transpose(2, 1, 0)[5:170]):
            np.testing.assert_array_equal(copies.copy(src), src)
    assert len(calls) == 3


def _concatenate_cases():
    a = RNG.standard_normal((40, 6, 50)).astype(np.float32)
    wide = RNG.standard_normal((40, 6, 100)).astype(np.float32)
    return {
        "axis 1 of 3-d, mixed widths": ([a, a[:, :2].copy(), a[:, :5] * 2], 1),
        "last axis, an empty part": ([wide, wide[..., :0], wide[..., 7:].copy()], 2),
        "int8 rows": ([RNG.integers(-9, 9, (64, 300)).astype(np.int8)] * 3, 1),
        "a part not contiguous": ([a, a[:, ::-1]], 1),
        "short runs": ([a[..., :3], a[..., :2]], 2),
        "axis 0 (one row)": ([a, a[:7]], 0),
        "few rows": ([a[:3], a[:3]], 2),
    }


@pytest.mark.parametrize("name", list(_concatenate_cases()))
def test_concatenate_is_numpys(name, two_threads, monkeypatch):
    """Row by row in one region where every part is contiguous with long runs and there are
    rows for every thread; part by part otherwise; numpy's bytes either way."""
    rows_kernel, calls = copies._copy_row_parts, []
    monkeypatch.setattr(copies, "_copy_row_parts",
                        lambda *a: (calls.append(a[-1]), rows_kernel(*a)))
    parts, axis = _concatenate_cases()[name]
    out = copies.concatenate(parts, axis)
    want = np.concatenate(parts, axis)
    assert out.dtype == want.dtype and out.flags.c_contiguous
    np.testing.assert_array_equal(out, want)
    rows = int(np.prod(want.shape[:axis]))
    by_rows = name in ("axis 1 of 3-d, mixed widths", "last axis, an empty part", "int8 rows")
    assert calls == ([rows] if by_rows else [])


CASES = {
    "concatenate axis 1": lambda a: jnp.concatenate([a, 2 * a, a], 1),
    "concatenate axis 0": lambda a: jnp.concatenate([a, a[:7]], 0),
    "pad": lambda a: jnp.pad(a, ((2, 3), (1, 4))),
    "pad with a value": lambda a: jnp.pad(a, 2, constant_values=-1.5),
    "pad, interior and negative": lambda a: lax.pad(a, np.float32(9), ((1, -2, 1), (-3, 2, 0))),
    "roll": lambda a: jnp.roll(a, 3, 1),
    "slice": lambda a: a[3:200, 5:260],
    "reverse rows": lambda a: a[::-1],
    "reverse columns": lambda a: a[:, ::-1],
    "dynamic_update_slice": lambda a: lax.dynamic_update_slice(a, a[:4, :8] + 1, (5, 9)),
    "scatter": lambda a: jnp.asarray(a).at[np.array([3, 1, 3])].add(1.0),
}


def _eager(fn, a):
    with numbax.disable_jit():
        return np.asarray(fn(a))


@pytest.mark.parametrize("name", list(CASES))
def test_copying_rules_under_jit_give_eagers_bits(name, two_threads):
    a = RNG.standard_normal((300, 280)).astype(np.float32)
    fn = CASES[name]
    np.testing.assert_array_equal(np.asarray(numbax.jit(fn)(a)), _eager(fn, a))


def test_copying_rules_against_numpy(two_threads):
    a = RNG.standard_normal((300, 280)).astype(np.float32)
    b = RNG.standard_normal((300, 17)).astype(np.float32)
    run = numbax.jit(lambda a, b: (jnp.concatenate([a, b], 1), jnp.pad(a, ((0, 2), (3, 0))),
                                   jnp.roll(a, -5, 0), a[::-1, 2:]))
    cat, padded, rolled, flipped = map(np.asarray, run(a, b))
    np.testing.assert_array_equal(cat, np.concatenate([a, b], 1))
    np.testing.assert_array_equal(padded, np.pad(a, ((0, 2), (3, 0))))
    np.testing.assert_array_equal(rolled, np.roll(a, -5, 0))
    np.testing.assert_array_equal(flipped, a[::-1, 2:])


# ----------------------------------------------------------------------------- x @ x.T


def test_product_with_its_own_transpose_leaves_syrk_on_many_threads(monkeypatch):
    """numpy gives x @ x.T of one buffer to syrk, slow on many threads: on more than
    SYRK_MAX_THREADS the product gets its own buffer or numbax's GEMM; the numbers stay."""
    x = RNG.standard_normal((300, 200)).astype(np.float32)
    assert library._syrk_pair(x, x.T) and not library._syrk_pair(x, x.copy().T)
    assert not library._syrk_pair(x[:, :100], x[:100].T)
    macs = 300 * 300 * 200
    same = library._without_syrk(x, x.T, macs, 2)
    assert same[1] is not None and library._syrk_pair(same[0], same[1])  # 2 threads: syrk
    monkeypatch.setattr(rt_threads, "CORES", 16)
    for blas_n in (0, 16):
        x2, y2, threads = library._without_syrk(x, x.T, macs, blas_n)
        assert threads is None or not library._syrk_pair(x2, y2)
        np.testing.assert_allclose(library.dot(x, x.T, macs), x.astype(np.float64)
                                   @ x.T.astype(np.float64), rtol=1e-4, atol=1e-3)
    with numbax.config.override("cpu_matmul", "blas"):
        x2, y2, threads = library._without_syrk(x, x.T, macs, 0)
        assert threads == 0 and not library._syrk_pair(x2, y2)
        np.testing.assert_array_equal(y2, x.T)
