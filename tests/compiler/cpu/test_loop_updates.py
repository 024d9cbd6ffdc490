"""Updates of a loop's carry in place (driver.donation_plan's in-place library rules,
host_flow._Carry): `x.at[i].set(v)` and scatters inside fori_loop, while_loop and scan write
into the buffer the loop owns instead of copying it each step; the caller's arrays and
constants are never written; the results are eager's, bit for bit."""
import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax

RNG = np.random.default_rng(5)


def _eager(fn, *args):
    with numbax.disable_jit():
        return [np.asarray(o) for o in numbax.tree_util.tree_leaves(fn(*map(jnp.asarray, args)))]


def _check(fn, *args):
    """jit(fn) gives eager's bits and leaves its numpy arguments as they were."""
    before = [a.copy() for a in args]
    got = [np.asarray(o) for o in numbax.tree_util.tree_leaves(numbax.jit(fn)(*args))]
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    for g, w in zip(got, _eager(fn, *args), strict=True):
        np.testing.assert_array_equal(g, w)
    return got


def test_fori_loop_filling_rows_against_a_python_loop():
    def fill(x):
        return lax.fori_loop(1, 200, lambda i, x: x.at[i].set(jnp.sin(i * 0.1) + x[i - 1]), x)

    x = np.zeros((200, 300), np.float32)
    (got,) = _check(fill, x)
    want = np.zeros_like(x)
    for i in range(1, 200):
        want[i] = np.float32(np.sin(i * 0.1)) + want[i - 1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_while_loop_and_scan_updates_with_traced_and_negative_indices():
    def walk(x):
        def body(c):
            i, x = c
            return i + 1, x.at[-i - 1, 1:4].add(x[i, :3] * 2.0)
        return lax.while_loop(lambda c: c[0] < 20, body, (0, x))

    def rows(x, ks):
        def step(x, k):
            x = x.at[k % 7].multiply(1.5)
            return x, x[k % 7, 1:3]
        return lax.scan(step, x, ks)

    x = RNG.standard_normal((30, 8))
    _check(walk, x)
    _check(rows, RNG.standard_normal((7, 5)), np.arange(40))


def test_out_of_bounds_traced_indices_drop_or_clip_as_jax():
    def drop(x):
        return lax.fori_loop(0, 6, lambda i, x: x.at[2 * i - 3].add(1.0), x)

    def clip(x):
        return lax.fori_loop(0, 6, lambda i, x: x.at[3 * i].add(1.0, mode="clip"), x)

    x = np.zeros(5)
    d, = _check(drop, x)
    np.testing.assert_array_equal(d, [0, 1, 1, 1, 1])  # -3, -1, 1, 3 land at 2, 4, 1, 3
    c, = _check(clip, x)
    np.testing.assert_array_equal(c, [1, 0, 0, 1, 4])  # 0, 3, then 6, 9, 12, 15 clamp to 4


def test_scatter_in_a_loop_with_updates_read_from_the_carry():
    idx = np.array([1, 4, 1, 0])

    def hist(x):
        return lax.fori_loop(0, 10, lambda i, x: x.at[jnp.asarray(idx)].add(x[:4] + i), x)

    x = RNG.standard_normal(6)
    (got,) = _check(hist, x)
    want = x.copy()
    for i in range(10):
        upd = want[:4] + i
        np.add.at(want, idx, upd)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_constants_and_views_returned_as_carry_are_never_written():
    """A body that returns a view of a constant as carry: the next step's update copies it."""
    const = np.arange(6.0)

    def body(i, c):
        c0, c1 = c
        return jnp.reshape(jnp.asarray(const), (2, 3)), c0.at[0, 0].add(1.0 + i)

    def run(x):
        return lax.fori_loop(0, 5, body, (x, x))

    _check(run, np.ones((2, 3)))
    np.testing.assert_array_equal(const, np.arange(6.0))


def test_a_donated_argument_is_updated_in_place():
    update = numbax.jit(lambda x, v: x.at[3].set(v), donate_argnums=0)
    text = update.lower(jnp.zeros(8), 1.0).compile().as_text()
    assert "kc.dynamic_update_slice(a0, " in text and ", d0)]" in text
    x = jnp.arange(8.0)
    out = update(x, 5.0)
    np.testing.assert_array_equal(np.asarray(out), [0, 1, 2, 5, 4, 5, 6, 7])


def test_the_host_loop_copies_its_carry_once_not_every_step(monkeypatch):
    """A body with an equation compiled loops cannot hold (digamma, which runs scipy's) runs
    as the driver's host loop: the body's driver updates the carry it is handed."""
    from numbax._src.compiler.cpu.runtime import copies

    copied = []
    plain = copies.copy
    monkeypatch.setattr(copies, "copy", lambda x: (copied.append(x.shape), plain(x))[1])
    def run(x):
        return lax.fori_loop(1, 50, lambda i, x: x.at[i].set(lax.digamma(x[i - 1] + 2.0)), x)

    fill = numbax.jit(run)
    x = np.zeros((50, 4))
    fill(x)  # compiles
    copied.clear()
    got = np.asarray(fill(x))
    assert copied == [(50, 4)]  # the caller's array, at the first step
    want = x.copy()
    for i in range(1, 50):
        want[i] = np.asarray(lax.digamma(want[i - 1] + 2.0))
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_array_equal(x, 0)


def test_the_compiled_loop_copies_its_carry_at_entry_only():
    fill = numbax.jit(lambda x: lax.fori_loop(0, 50, lambda i, x: x.at[i].set(i * 1.0), x))
    x = np.zeros((50, 4))
    text = fill.lower(x).compile().as_text()
    kernel = text.split("def kernel")[1].split("# driver")[0]
    entry = next(line for line in kernel.splitlines() if "a1.copy()" in line)
    carry = entry.split("=")[0].split(",")[1].strip()  # `v0, v1, = np.int64(0), a1.copy(),`
    loop = kernel[kernel.index("for "):]
    update = next(line for line in loop.splitlines() if "dynamic_update_slice" in line)
    assert update.strip().startswith(f"{carry}[") and f"{carry}.copy()" not in loop
    np.testing.assert_array_equal(np.asarray(fill(x)), np.repeat(np.arange(50.0), 4).reshape(50, 4))
    np.testing.assert_array_equal(x, 0)


def test_carries_that_share_an_array_are_not_written_in_place():
    """A body returning one array as two carries, or a carry its const: each update copies."""
    const = np.arange(4.0)

    def body(i, c):
        a, b = c
        a = a.at[i % 4].add(1.0)
        return a, a  # both carries one array: the next step's updates must not see each other

    def body_const(i, c):
        a, k = c
        return jnp.asarray(const) * 1.0, a.at[i % 4].set(-1.0)

    _check(lambda x: lax.fori_loop(0, 6, body, (x, x)), np.zeros(4))
    _check(lambda x: lax.fori_loop(0, 6, body_const, (x, x)), np.ones(4))
    np.testing.assert_array_equal(const, np.arange(4.0))


def test_a_carry_read_by_another_array_op_before_its_update_is_copied():
    """An array form that reads the carry (a transpose here) might return a view of it, which
    the renderer cannot tell: the update then copies the carry, and the value read before it
    stays the old one."""
    def body(i, c):
        x, acc = c
        before = x.T
        x = x.at[0, i % 5].set(-1.0)
        return x, acc + before[:, 0].sum()

    def run(x):
        return lax.fori_loop(0, 7, body, (x, 0.0))

    x = np.arange(5.0).reshape(1, 5)
    _check(run, x)
    kernel = numbax.jit(run).lower(x).compile().as_text().split("def kernel")[1]
    loop = kernel[kernel.index("for "):kernel.index("return")]
    update = next(line for line in loop.splitlines() if "dynamic_update_slice" in line)
    copy = update.strip().split("[")[0] + " = "
    assert any(line.strip().startswith(copy) and line.strip().endswith(".copy()")
               for line in loop.splitlines())
