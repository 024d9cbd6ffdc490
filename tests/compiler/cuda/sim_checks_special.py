"""Simulator checks of the special and bit-level lowerings (cuda_special.py, cuda_index.py):
special values and edge cases the primitive matrix's random rows do not reach."""
from __future__ import annotations

import numpy as np
import scipy.special as sp

import numbax
import numbax.numpy as jnp
from numbax import lax
from tests.compiler.cuda.sim_checks import check, close, gjit


@check
def digamma_polygamma_special_values():
    x = np.array([0.0, -0.0, -1.0, -2.5, -0.5, 1e-8, 0.3, 1.4616321449683622, 7.5, 30.0, 1e6,
                  np.inf, -np.inf, np.nan])
    with np.errstate(invalid="ignore"):  # scipy's, but nan at every pole (0 too), as JAX's
        want = np.where((x <= 0) & (x == np.floor(x)), np.nan, sp.digamma(x))
    close(gjit(lax.digamma)(x), want, rtol=1e-12, atol=1e-13)
    close(gjit(lax.digamma)(x.astype(np.float32)), want.astype(np.float32), rtol=2e-6, atol=1e-6)
    xs = np.array([0.2, 1.0, 2.5, 11.0, 100.0, -0.5, -1.5, -2.0, 0.0])
    poles = (xs <= 0) & (xs == np.floor(xs))
    for m in (1.0, 2.0, 3.0):
        mm = np.full_like(xs, m)  # at the poles inf for odd m, nan for even m, as JAX's
        want = np.where(poles, np.inf if m % 2 else np.nan, sp.polygamma(mm, xs))
        close(gjit(lax.polygamma)(mm, xs), want, rtol=1e-11, atol=1e-13)


@check
def population_count_and_nextafter():
    ints = np.array([0, 1, 7, 255, -1, -8, 2**40 + 3, np.iinfo(np.int64).min,
                     np.iinfo(np.int64).max])
    for dt in (np.int64, np.int32, np.uint32, np.uint8):
        v = ints.astype(dt)
        close(gjit(lax.population_count)(v), np.bitwise_count(v).astype(dt))
    x = np.array([0.0, -0.0, 1.0, -1.0, 1e-308, np.inf, -np.inf, np.nan, 3.0])
    y = np.array([1.0, -1.0, 2.0, -np.inf, 0.0, 0.0, np.inf, 1.0, np.nan])
    for dt in (np.float64, np.float32):
        close(gjit(lax.nextafter)(x.astype(dt), y.astype(dt)),
              np.nextafter(x.astype(dt), y.astype(dt)), rtol=0, atol=0)


@check
def float_scatter_mul_and_along_axis():
    for dt in (np.float32, np.float64):
        x = np.arange(1, 7, dtype=dt)
        idx = np.array([0, 2, 2, 5, 0, 2])  # duplicates multiply in any order
        upd = np.array([2.0, 3.0, -0.5, np.nan, 4.0, 10.0], dt)
        want = x.copy()
        np.multiply.at(want, idx, upd)
        close(gjit(lambda a, i, u: a.at[i].multiply(u))(x, idx, upd), want, rtol=1e-6)
    u = np.arange(12.0).reshape(3, 4)
    perm = np.array([[3, 0, 1, 2], [1, -1, 0, 2], [0, 1, 2, 3]])
    want = np.zeros((3, 4))
    np.add.at(want, (np.arange(3)[:, None], perm), u)
    from numbax._src.lax import along_axis
    close(gjit(lambda a, i: along_axis.scatter_add_along_axis_p.bind(a, i, axis=1, size=4))(
        u, perm), want)
    close(gjit(lambda a, i: along_axis.take_along_axis(a, i, 1))(u, perm),
          np.take_along_axis(u, perm % 4, axis=1))
    # the sort derivative uses both primitives
    v = np.array([[0.3, -1.0, 2.0, 0.5], [1.0, 1.0, -2.0, 0.0]])
    g = gjit(numbax.grad(lambda a: jnp.sum(jnp.sort(a, axis=1) * jnp.arange(4.0))))(v)
    close(g, np.asarray(numbax.jit(numbax.grad(
        lambda a: jnp.sum(jnp.sort(a, axis=1) * jnp.arange(4.0))))(v)))


# (operand shape, index shape, axis): index dims of size 1 broadcast against the operand's
# (the output takes the operand's size there), including the (batch, n, 1) row permutation
# that LU solves gather with and vmap's leading 1 for an unbatched index
_ALONG_AXIS_CASES = (((2, 4, 3), (2, 4, 1), 1), ((2, 4, 3), (1, 4, 3), 1),
                     ((2, 4, 3), (1, 6, 1), 1), ((4, 3), (6, 1), 0), ((2, 3, 5), (2, 1, 2), 2),
                     ((3, 4), (3, 1), 1), ((5,), (7,), 0))


@check
def along_axis_broadcast_indices():
    """take_along_axis and scatter_add_along_axis with broadcast index dims (one kernel thread
    per output element, not per index) against numpy, float and integer operands."""
    from numbax._src.lax import along_axis

    rng = np.random.default_rng(5)
    for xs, ishape, axis in _ALONG_AXIS_CASES:
        n = xs[axis]
        idx = rng.integers(-n, n, ishape)  # negative indices wrap, as numpy's
        full = tuple(ishape[d] if d == axis else xs[d] for d in range(len(xs)))
        for dt, it in ((np.float64, np.int32), (np.float32, np.int64), (np.int32, np.uint8),
                       (np.int64, np.int32), (np.bool_, np.int32)):
            x = (rng.normal(size=xs) * 4).astype(dt)
            i = (idx % n).astype(it) if it == np.uint8 else idx.astype(it)
            want = np.take_along_axis(x, np.broadcast_to(i, full), axis)
            got = gjit(lambda a, j, axis=axis: along_axis.take_along_axis(a, j, axis))(x, i)
            close(got, want, rtol=0, atol=0)
            close(gjit(lambda a, j, axis=axis: jnp.take_along_axis(a, j, axis))(x, i), want,
                  rtol=0, atol=0)
            if dt == np.bool_:  # no bool scatter-add kernel (no bool atomics) to check
                continue
            u = (rng.normal(size=full) * 4).astype(dt)
            shape = tuple(n if d == axis else full[d] for d in range(len(xs)))
            at = list(np.indices(full, sparse=True))
            at[axis] = np.broadcast_to(i, full)
            want = np.zeros(shape, dt)
            np.add.at(want, tuple(at), u)
            got = gjit(lambda v, j, axis=axis, n=n: along_axis.scatter_add_along_axis(v, j,
                                                                                   axis, n))
            close(got(u, i), want, rtol=1e-6, atol=1e-5)
    # vmap over the operand with an unbatched index: a leading 1 in the index
    x = rng.normal(size=(3, 4, 2))
    idx = np.array([[2], [0], [3], [1]])
    for take in (along_axis.take_along_axis, jnp.take_along_axis):
        close(gjit(numbax.vmap(lambda a, take=take: take(a, idx, 0)))(x),
              np.take_along_axis(x, idx[None], 1), rtol=0, atol=0)
    # cumulative ops' derivatives shift with an index broadcast along every other axis
    x = rng.uniform(0.5, 1.5, (3, 5))
    for cum in (jnp.cumprod, numbax.lax.cummax):
        g = numbax.grad(lambda a, cum=cum: jnp.sum(cum(a, axis=1) ** 2))
        close(gjit(g)(x), np.asarray(numbax.jit(g)(x)), rtol=1e-12)
