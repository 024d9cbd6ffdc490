"""Programs using jax.debug and the host callbacks, shared by make_api_reference.py (run
with JAX) and tests/test_debug.py (numbax): each takes a namespace holding `jax`, `jnp`, `lax`,
`io_callback` and returns what it printed plus its results as plain Python values."""
import contextlib
import io

import numpy as np


def _run(fn):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn()
    return {"printed": out.getvalue(), "result": _plain(result)}


def _plain(x):
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    return np.asarray(x).tolist()


def print_eager(m):
    def go():
        x = m.jnp.arange(3.0)
        m.jax.debug.print("x = {}", x)
        m.jax.debug.print("sum={s:.3f} first={x[0]} second={}", x[1], s=x.sum() / 7, x=x)
        m.jax.debug.print("no placeholders", x, 2.5, skip_format_check=True)
        m.jax.debug.print("{} and {tag}", 1.5, tag="static text")
        m.jax.debug.print(ordered=True)("two-call {}", 4)
    return _run(go)


def print_jit_each_call(m):
    @m.jax.jit
    def f(x):
        m.jax.debug.print("in jit: {x}", x=x)
        y = x * 2
        m.jax.debug.print("y = {}", y)
        return y
    return _run(lambda: [f(1.0), f(2.5), f(m.jnp.arange(2.0))])


def print_vmap(m):
    def f(x, y):
        m.jax.debug.print("x={} y={}", x, y)
        return x + y
    xs = m.jnp.arange(3.0)
    return _run(lambda: [m.jax.vmap(f, in_axes=(0, None))(xs, 10.0),
                         m.jax.jit(m.jax.vmap(f))(xs, xs * 2)])


def print_grad(m):
    def f(x):
        m.jax.debug.print("primal {}", x)
        y = m.jnp.sin(x)
        m.jax.debug.print("sin {}", y)
        return y * x
    return _run(lambda: [m.jax.grad(f)(0.5), m.jax.jit(m.jax.grad(f))(1.0),
                         m.jax.value_and_grad(f)(2.0)])


def print_control_flow(m):
    lax = m.lax

    def body(c, x):
        m.jax.debug.print("scan c={} x={}", c, x)
        return c + x, c * x

    def wbody(c):
        m.jax.debug.print("while {}", c)
        return c + 1

    def branch(name):
        return lambda x: (m.jax.debug.print(name + " {}", x), x + 1)[1]

    def fori(i, c):
        m.jax.debug.print("fori i={} c={}", i, c)
        return c + i

    def go():
        return [m.jax.jit(lambda xs: lax.scan(body, 0.0, xs))(m.jnp.arange(3.0)),
                m.jax.jit(lambda c: lax.while_loop(lambda c: c < 3, wbody, c))(0),
                m.jax.jit(lambda p, x: lax.cond(p, branch("yes"), branch("no"), x))(True, 1.0),
                m.jax.jit(lambda p, x: lax.cond(p, branch("yes"), branch("no"), x))(False, 2.0),
                m.jax.jit(lambda x: lax.fori_loop(0, 3, fori, x))(10)]
    return _run(go)


def print_ordered(m):
    def f(x):
        m.jax.debug.print("first {}", x, ordered=True)
        y = m.jnp.sin(x) * 2
        m.jax.debug.print("second {}", y, ordered=True)
        z = y + x
        m.jax.debug.print("third {}", z.sum(), ordered=True)
        return z
    return _run(lambda: m.jax.jit(f)(m.jnp.arange(3.0)))


def print_checkpoint_and_custom_jvp(m):
    def g(x):
        m.jax.debug.print("remat x {}", x)
        return x * x

    @m.jax.custom_jvp
    def f(x):
        return m.jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        m.jax.debug.print("tangent {}", tangents[0])
        return f(primals[0]), 2.0 * tangents[0]

    return _run(lambda: [m.jax.grad(m.jax.checkpoint(g))(2.0),
                         m.jax.jvp(f, (1.0,), (3.0,))[1], m.jax.grad(f)(1.0)])


def debug_callback(m):
    def show(label, x, *, scale):
        print(label, np.asarray(x) * scale)

    def f(x):
        m.jax.debug.callback(show, "cb", x, scale=2.0)
        m.jax.debug.callback(ordered=True)(show, "ordered", x, scale=1.0)
        return x + 1
    xs = m.jnp.arange(2.0)
    return _run(lambda: [f(xs), m.jax.jit(f)(xs), m.jax.vmap(f)(xs)])


def pure_callback_vmap_methods(m):
    def cb(x, y):
        print("shapes", np.shape(x), np.shape(y))
        return np.asarray(x) + np.asarray(y)

    def f(x, y, method):
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        out = m.jax.ShapeDtypeStruct(shape, m.jnp.result_type(x, y))
        return m.jax.pure_callback(cb, out, x, y, vmap_method=method)

    x = m.jnp.arange(4.0)
    def go():
        res = [m.jax.vmap(lambda a, b, method=method: f(a, b, method), in_axes=(0, None))(
            x, 1.0) for method in ("sequential", "expand_dims", "broadcast_all")]
        res.append(m.jax.jit(m.jax.vmap(lambda a, b: f(a, b, "expand_dims")))(x, x))
        res.append(m.jax.jit(lambda a: f(a, 2.0, None))(x))
        return res
    return _run(go)


def pure_callback_unused_and_pytrees(m):
    calls = []

    def cb(d):
        calls.append(1)
        return {"s": np.sum(d["a"]), "p": (np.asarray(d["a"]) * d["b"],)}

    out_shape = {"s": m.jax.ShapeDtypeStruct((), m.jnp.float64),
                 "p": (m.jax.ShapeDtypeStruct((3,), m.jnp.float64),)}

    def used(a):
        return m.jax.pure_callback(cb, out_shape, {"a": a, "b": 2.0})

    def unused(a):
        m.jax.pure_callback(cb, out_shape, {"a": a, "b": 2.0})
        return a + 1

    def go():
        r = used(m.jnp.arange(3.0))
        rj = m.jax.jit(used)(m.jnp.arange(3.0))
        before = len(calls)
        m.jax.jit(unused)(m.jnp.arange(3.0))
        return [r["s"], r["p"][0], rj["s"], rj["p"][0], len(calls) - before]
    return _run(go)


def io_callback_effects(m):
    log = []

    def record(x):
        log.append(float(x))
        return np.asarray(len(log), np.int64)

    spec = m.jax.ShapeDtypeStruct((), m.jnp.int64)

    def unused(x):
        m.io_callback(record, spec, x)
        return x * 2

    def go():
        a = m.jax.jit(lambda x: m.io_callback(record, spec, x, ordered=True))(1.5)
        b = m.jax.jit(unused)(2.5)
        c = m.jax.vmap(lambda x: m.io_callback(record, spec, x))(m.jnp.arange(3.0))
        return [a, b, c, log]
    return _run(go)


PROGRAMS = {f.__name__: f for f in (
    print_eager, print_jit_each_call, print_vmap, print_grad, print_control_flow,
    print_ordered, print_checkpoint_and_custom_jvp, debug_callback,
    pure_callback_vmap_methods, pure_callback_unused_and_pytrees, io_callback_effects)}
