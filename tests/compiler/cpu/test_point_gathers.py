"""Gathers of single elements as loads in the loops around them (compiler/point_gathers.py):
compiled lookups give the gather's numbers (a numpy loop's, and eager numbax's bit for bit),
clamped or filled out of bounds, for every index dtype, batched tables, tables made in the
program, and rows taken whole; the forms left to the library gather stay correct."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import point_gathers
from numbax.scipy import ndimage

RNG = np.random.default_rng(5)


def _text(f, *args) -> str:
    return numbax.jit(f).lower(*args).as_text()


def _loads(x, coords, fill=None):
    """x at the coordinates (one array per axis, negative ones counted from the end as jnp
    indexing does), each clamped into its axis, or `fill` where one is outside: a loop."""
    out = np.empty(np.shape(coords[0]), x.dtype)
    for p in np.ndindex(out.shape):
        at = [int(c[p]) + (n if int(c[p]) < 0 else 0) for c, n in zip(coords, x.shape)]
        inside = all(0 <= a < n for a, n in zip(at, x.shape))
        if fill is not None and not inside:
            out[p] = fill
        else:
            out[p] = x[tuple(min(max(a, 0), n - 1) for a, n in zip(at, x.shape))]
    return out


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("idtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64])
def test_computed_coordinates_load_as_the_gather(mode, idtype):
    x = RNG.standard_normal((7, 9)).astype(np.float32)
    a = RNG.integers(0, 20, (6, 11)).astype(idtype)
    b = RNG.integers(0, 20, (6, 11)).astype(idtype)

    def f(x, a, b):
        i, j = a - idtype(5), b // idtype(2)  # out of bounds both ways (unsigned: wrapped high)
        got = jnp.asarray(x).at[i, j].get(mode=mode, fill_value=-7.5 if mode == "fill" else None)
        return got * 2.0 + 1.0

    assert "lookup" in _text(f, x, a, b) and "kc.gather" not in _text(f, x, a, b)
    out = np.asarray(numbax.jit(f)(x, a, b))
    i, j = a - idtype(5), b // idtype(2)
    want = _loads(x, [i, j], -7.5 if mode == "fill" else None) * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out, np.asarray(f(x, a, b)))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint16, np.bool_])
def test_default_fill_values_and_dtypes(dtype):
    x = (RNG.standard_normal((5, 4)) * 10).astype(dtype)
    i = jnp.asarray(RNG.integers(-8, 8, (3, 50)))
    f = numbax.jit(lambda x, i: jnp.asarray(x).at[i, 3 - i].get(mode="fill"))
    fill = np.nan if np.dtype(dtype).kind == "f" else (
        np.iinfo(dtype).min if np.dtype(dtype).kind == "i" else
        np.iinfo(dtype).max if np.dtype(dtype).kind == "u" else True)
    want = _loads(x, [np.asarray(i), 3 - np.asarray(i)], fill)
    np.testing.assert_array_equal(np.asarray(f(x, i)), want)


@pytest.mark.parametrize("rest", [3, point_gathers.REST_MAX + 4])
def test_rows_taken_whole(rest):
    x = RNG.standard_normal((6, 5, rest)).astype(np.float32)
    i = RNG.integers(-7, 7, (40,))
    j = RNG.integers(0, 5, (40,))
    f = lambda x, i, j: x[i * 2 % 6, j] + 1.0  # noqa: E731
    text = _text(f, x, i, j)
    assert ("lookup" in text) == (rest <= point_gathers.REST_MAX)
    want = x[(i * 2) % 6, j] + np.float32(1)
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(x, i, j)), want)


def test_shared_coordinates_under_vmap_take_the_batch_whole():
    """vmap over tables with unbatched coordinates: the batch axis is taken whole (rows of 5),
    then moved in front by a transpose, which sinks into the lookup's coordinates."""
    tables = RNG.standard_normal((5, 12, 9)).astype(np.float32)
    i = RNG.integers(-3, 15, (6, 7))
    f = numbax.vmap(lambda t: t[i, (i * 5) % 9] - 0.5)
    text = _text(f, tables)
    assert "lookup" in text and "transpose" not in text.split("def driver")[-1]
    want = tables[:, np.clip(i, -12, 11), (i * 5) % 9] - np.float32(0.5)
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(tables)), want)


def test_batched_tables_under_vmap():
    tables = RNG.standard_normal((4, 10, 3)).astype(np.float32)
    idx = RNG.integers(-12, 12, (4, 7, 2))

    def one(t, ij):
        return jnp.asarray(t).at[ij[:, 0], ij[:, 1]].get(mode="fill", fill_value=0.5) * 3.0

    f = numbax.jit(numbax.vmap(one))
    want = np.stack([_loads(t, [k[:, 0], k[:, 1]], np.float32(0.5)) * np.float32(3)
                     for t, k in zip(tables, idx)])
    np.testing.assert_array_equal(np.asarray(f(tables, idx)), want)
    np.testing.assert_array_equal(np.asarray(f(tables, idx)),
                                  np.asarray(numbax.vmap(one)(tables, idx)))


def test_tables_made_in_the_program_are_read_whole():
    """A table computed by work of the lookup's own shape (recomputed into its loop, it would
    be read at the loop's index) and a broadcast table."""
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    perm = RNG.permutation(64 * 64).reshape(64, 64)

    def f(x, p):
        doubled = x * 2.0 + 1.0
        wide = jnp.broadcast_to(x[0], (64, 64))
        return doubled.reshape(-1)[p], wide[p // 64, p % 64] - doubled

    a, b = numbax.jit(f)(x, perm)
    d = x * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(np.asarray(a), d.reshape(-1)[perm])
    np.testing.assert_array_equal(np.asarray(b), x[0][perm % 64] - d)


def test_large_lookups_on_threads():
    """Big enough for the threaded and pool-task forms: each chunk reads the whole table."""
    table = RNG.standard_normal((300, 257)).astype(np.float32)
    i = RNG.integers(0, 300, (1 << 20,)).astype(np.int32)
    f = numbax.jit(lambda t, i: t[i, (i * 7) % 257] * 3.0)
    for _ in range(3):  # (the thread runtime picks its form from timings of earlier calls)
        out = np.asarray(f(table, i))
    np.testing.assert_array_equal(out, table[i, (i * 7) % 257] * np.float32(3))


def test_forms_left_to_the_library_gather():
    c = (RNG.standard_normal((6, 5)) + 1j * RNG.standard_normal((6, 5))).astype(np.complex64)
    i = RNG.integers(0, 6, (9,))
    f = lambda c, i: c[i, 4 - i % 5]  # noqa: E731
    assert "lookup" not in _text(f, c, i)
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(c, i)), c[i, 4 - i % 5])


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_map_coordinates_as_the_library_gathers(mode, order, monkeypatch):
    imgs = RNG.standard_normal((3, 23, 17)).astype(np.float32)
    angles = np.array([0.2, 0.9, 2.1], np.float32)
    yy, xx = np.meshgrid(np.arange(23, dtype=np.float32), np.arange(17, dtype=np.float32),
                         indexing="ij")

    def one(img, a):
        ys = jnp.cos(a) * (yy - 11) - jnp.sin(a) * (xx - 8) * 1.3 + 11
        xs = jnp.sin(a) * (yy - 11) + jnp.cos(a) * (xx - 8) * 1.3 + 8
        return ndimage.map_coordinates(img, [ys, xs], order=order, mode=mode, cval=0.25)

    text = _text(numbax.vmap(one), imgs, angles)
    assert "lookup" in text and "kc.gather" not in text
    loads = np.asarray(numbax.jit(numbax.vmap(one))(imgs, angles))
    monkeypatch.setattr(point_gathers, "gathers_as_lookups", lambda jaxpr: jaxpr)
    numbax.clear_caches()
    text = _text(numbax.vmap(one), imgs, angles)
    assert "lookup" not in text and "kc.gather" in text
    np.testing.assert_array_equal(loads, np.asarray(numbax.jit(numbax.vmap(one))(imgs, angles)))
    numbax.clear_caches()
