"""checkify programs shared by make_api_reference.py (run with JAX) and tests/test_checkify.py
(numbax): each takes a namespace holding `jax`, `jnp`, `checkify` and returns the error
messages (and values) as plain Python data."""
import numpy as np


def _msg(fn):
    """The message of what fn raises (its type's name and text), or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the reference records what was raised
        return [type(e).__name__, str(e)]
    return None


def _f(m):
    jnp, ck = m.jnp, m.checkify

    def f(x, i):
        ck.check(x > 0, "x must be positive, got {x}", x=x)
        y = jnp.log(x - 1.0)
        return y + jnp.arange(3.0)[i] + jnp.floor_divide(7, i)
    return f


ARGS = [(2.0, 1), (-1.0, 1), (0.5, 1), (2.0, 5), (2.0, 0), (2.0, -5)]


def error_sets(m):
    ck, jnp = m.checkify, m.jnp
    sets = {"user": ck.user_checks, "nan": ck.nan_checks, "index": ck.index_checks,
            "div": ck.div_checks, "float": ck.float_checks, "automatic": ck.automatic_checks,
            "all": ck.all_checks, "nan_and_user": ck.nan_checks | ck.user_checks}
    out = {}
    for name, errors in sets.items():
        cf = ck.checkify(_f(m), errors=errors)
        out[name] = [cf(jnp.asarray(x), jnp.asarray(i))[0].get() for x, i in ARGS]
    return out


def transformations(m):
    jax, jnp, ck = m.jax, m.jnp, m.checkify
    f = _f(m)
    cf = ck.checkify(f, errors=ck.all_checks)
    err, out = jax.jit(cf)(jnp.asarray(3.0), jnp.asarray(2))
    batched, _ = jax.vmap(cf)(jnp.array([2.0, -1.0, 3.0, 0.5]), jnp.array([1, 1, 7, 2]))
    inner_vmap, _ = ck.checkify(jax.vmap(f), errors=ck.all_checks)(
        jnp.array([2.0, 3.0, -4.0]), jnp.array([1, 2, 1]))
    inner_jit, _ = ck.checkify(jax.jit(f), errors=ck.all_checks)(jnp.asarray(-2.0),
                                                                jnp.asarray(1))
    grad_nan = ck.checkify(jax.grad(jnp.sqrt), errors=ck.float_checks)(jnp.asarray(-1.0))[0]
    g = jax.grad(lambda x: ck.checkify(lambda v: jnp.sin(v) * v)(x)[1])(jnp.asarray(0.5))
    return [err.get(), float(out), batched.get(), _msg(batched.throw), inner_vmap.get(),
            inner_jit.get(), grad_nan.get(), float(g)]


def control_flow(m):
    jax, jnp, ck, lax = m.jax, m.jnp, m.checkify, m.jax.lax

    def loop(x):
        def body(c, _):
            ck.check(c < 5, "c too big: {}", c)
            return c + 1, c * 2
        return lax.scan(body, x, None, length=10)

    def branch(x):
        return lax.cond(x > 0, lambda v: (ck.check(v < 3, "cond {}", v), v)[1],
                        lambda v: jnp.log(v), x)

    def wloop(x):
        def body(c):
            ck.check(c != 4, "while {}", c)
            return c + 1
        return lax.while_loop(lambda c: jnp.arange(6)[c] < 5, body, x)

    def fori(x):
        return lax.fori_loop(0, 4, lambda i, c: c / (i - 2.0), x)

    nan_set = ck.nan_checks | ck.user_checks
    return [ck.checkify(loop)(jnp.asarray(0))[0].get(),
            ck.checkify(loop)(jnp.asarray(-20))[0].get(),
            ck.checkify(branch, errors=nan_set)(jnp.asarray(5.0))[0].get(),
            ck.checkify(branch, errors=nan_set)(jnp.asarray(-5.0))[0].get(),
            ck.checkify(branch, errors=nan_set)(jnp.asarray(1.0))[0].get(),
            ck.checkify(wloop, errors=ck.all_checks)(jnp.asarray(0))[0].get(),
            ck.checkify(wloop, errors=ck.index_checks)(jnp.asarray(7))[0].get(),
            jax.jit(ck.checkify(fori, errors=ck.div_checks))(jnp.asarray(1.0))[0].get(),
            jax.jit(ck.checkify(loop))(jnp.asarray(3))[0].get()]


def automatic(m):
    jnp, ck, lax = m.jnp, m.checkify, m.jax.lax
    idx = ck.index_checks
    ones = jnp.ones(3)
    cases = [
        (lambda x: x / 0.0, ck.all_checks, (jnp.asarray(1.0),)),
        (jnp.sin, ck.nan_checks, (jnp.asarray(np.inf),)),
        (lambda x: x + 1.0, ck.nan_checks, (jnp.asarray(np.nan),)),
        (lambda x, i: x.at[i].set(1.0), idx, (ones, jnp.asarray(7))),
        (lambda x, i: x.at[i].add(1.0), idx, (ones, jnp.asarray(-9))),
        (lambda x, i: lax.dynamic_slice(x, (i,), (2,)), idx, (ones, jnp.asarray(2))),
        (lambda x, i: lax.dynamic_update_slice(x, jnp.ones(2), (i,)), idx,
         (ones, jnp.asarray(-1))),
        (lambda x, i: x[i], idx, (ones, jnp.asarray(-5))),
        (lambda x, i: x[i], idx, (ones, jnp.array([0, 4, 1]))),
        (lambda x, i: jnp.take(x, i, axis=1), idx, (jnp.ones((2, 3)), jnp.array([2, 3]))),
        (lambda x, i: x % i, ck.div_checks, (jnp.asarray(3), jnp.asarray(0))),
        (lambda x, i: x // i, ck.div_checks, (jnp.asarray(3), jnp.asarray(0))),
        (lambda x: jnp.log(x) + jnp.sqrt(x), ck.nan_checks, (jnp.asarray(-1.0),)),
    ]
    return [ck.checkify(fn, errors=errors)(*args)[0].get() for fn, errors, args in cases]


def user_checks(m):
    jax, jnp, ck = m.jax, m.jnp, m.checkify

    def two(x):
        ck.check(x > 0, "first {} {}", x, x * 2)
        ck.check(x > -5, "second {a}", a=x)
        return x

    def nested(x):
        err, y = ck.checkify(lambda v: (ck.check(v < 10, "big {}", v), v)[1])(x)
        ck.check_error(err)
        return y

    def debug(x):
        ck.debug_check(x > 0, "dbg {}", x)
        return x * 2

    x = jnp.asarray(-7.0)
    return [ck.checkify(two)(x)[0].get(), ck.checkify(two)(jnp.asarray(-2.0))[0].get(),
            jax.jit(ck.checkify(two))(jnp.asarray(1.0))[0].get(),
            ck.checkify(nested)(jnp.asarray(20.0))[0].get(),
            _msg(lambda: nested(jnp.asarray(20.0))),
            _msg(lambda: ck.check(jnp.asarray(False), "outside {}", jnp.asarray(3))),
            _msg(lambda: ck.checkify(nested)(jnp.asarray(20.0))[0].throw()),
            float(debug(x)), ck.checkify(debug)(x)[0].get(),
            jax.jit(ck.checkify(debug))(x)[0].get(),
            ck.init_error.get(), str(ck.init_error)]


PROGRAMS = {f.__name__: f for f in (error_sets, transformations, control_flow, automatic,
                                     user_checks)}
