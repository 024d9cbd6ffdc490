"""Generated source: fusion, prange placement, determinism, no user strings, plain Python."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.source import render_value

from .kernel_text import called, called_text, modules

ROOT = str(Path(__file__).resolve().parents[3])
X = np.linspace(-3, 3, 12).reshape(3, 4)


def selu(x):
    return 1.0507 * jnp.where(x > 0, x, 1.6733 * jnp.expm1(x))


def softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _kernels(text):
    return len(modules(text)) - 1  # kernel modules, without the driver


def test_selu_is_one_loop_nest():
    text = numbax.jit(selu).lower(X).as_text()
    assert _kernels(text) == 1
    assert "fm.expm1_f64" in text  # the vectorisable expm1, not libm


def test_softmax_is_one_row_kernel():
    wide = np.linspace(-3, 3, 120).reshape(3, 40)
    # (rows of at most 16 keep their accumulators in arrays, one entry a row: rows.py)
    for x, acc in ((wide, "acc1"), (X, "acc1[r]")):
        text = numbax.jit(softmax).lower(x).as_text()
        assert _kernels(text) == 1  # max, sum of exp and the divide: passes over each row
        text = called_text(text)
        assert text.count(f"{acc} = rd.add({acc},") == 1  # exp fused into the sum pass
        assert f"rd.max_({acc.replace('1', '0')}" in text


def test_prange_on_batch_axis_of_jit_vmap():
    xb = np.ones((64, 8192))  # 2**19 elements: cpu/loops.PRANGE_MIN
    f = numbax.jit(numbax.vmap(lambda v: jnp.tanh(v) * 2.0 + jnp.sum(v)))
    [kernel] = called(f.lower(xb).as_text())
    assert "for i0 in prange(m0):" in kernel  # the batch axis
    [small] = called(f.lower(X).as_text())  # the same module; the driver calls its serial twin
    assert "def kernel_serial(" in small and "prange(" not in small


def test_params_render_without_user_strings():
    assert render_value((1, (2, 3))) == "(1, (2, 3))"
    assert render_value(np.dtype("float32")) == "np.dtype('float32')"
    with pytest.raises(NotImplementedError, match="parameter of type"):
        render_value(object())
    with pytest.raises(NotImplementedError, match="parameter of type"):
        render_value("drop table; x")


def test_hostile_names_never_in_source():
    evil = "__import__('os').system('echo pwned')"

    def f(d):
        return {evil: d[evil] * 2.0, "k\n#": jnp.sum(d["k\n#"])}

    f.__name__ = "evil_'\"\nname"
    text = numbax.jit(f).lower({evil: X, "k\n#": X}).as_text()
    assert "pwned" not in text and "evil" not in text and "k\n#" not in text


_DETERMINISM = textwrap.dedent("""
    import numpy as np, numbax, numbax.numpy as jnp
    def f(x, y):
        return {"b": jnp.tanh(x) @ y, "a": jnp.sum(x * 2.0, axis=0)}
    print(numbax.jit(f).lower(np.ones((3, 4)), np.ones((4, 2))).as_text())
""")


def _run(code, **env):
    full = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, check=True).stdout


def test_source_identical_under_hash_seeds():
    a = _run(_DETERMINISM, PYTHONHASHSEED="1")
    b = _run(_DETERMINISM, PYTHONHASHSEED="12345")
    assert a == b and "def driver" in a


def test_emitted_modules_run_as_plain_python():
    code = textwrap.dedent("""
        import numpy as np, numbax, numbax.numpy as jnp
        x = np.linspace(-2, 2, 12).reshape(3, 4)
        e = np.exp(x - x.max(-1, keepdims=True))
        got = numbax.jit(lambda x: jnp.exp(x - jnp.max(x, -1, keepdims=True)) /
                         jnp.sum(jnp.exp(x - jnp.max(x, -1, keepdims=True)), -1, keepdims=True))(x)
        np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-12)
        print("ok")
    """)
    assert _run(code, NUMBA_DISABLE_JIT="1", NUMBAX_COMPILATION_CACHE="0").strip() == "ok"


def test_random_normal_is_one_loop():
    """iota (the counters), bitcast (bits to float) and erf_inv fuse with threefry, whose key
    schedule is inside its helper (compiler/threefry.py): one loop over 5000."""
    key = numbax.random.key(0)
    f = numbax.jit(lambda k: numbax.random.normal(k, (5000,), dtype=np.float32))
    driver = f.lower(key).as_text().split("def driver(")[1]
    assert driver.count("_loop(") == 1
    code = "\n".join(line.split("#")[0] for line in driver.splitlines())
    assert "iota" not in code and "call_impl" not in code
    eager = np.asarray(numbax.random.normal(key, (5000,), dtype=np.float32))
    np.testing.assert_array_max_ulp(np.asarray(f(key)), eager, maxulp=4)
    u = numbax.jit(lambda k: numbax.random.uniform(k, (5000,)))
    np.testing.assert_array_equal(np.asarray(u(key)),
                                  np.asarray(numbax.random.uniform(key, (5000,))))


@pytest.mark.parametrize("case", ["flat", "broadcast", "reduced_after", "rows_after", "float"])
def test_iota_in_loop_nests(case):
    """iota is the loop index along its dimension: in flattened loops (divided back), loops
    with broadcasts, nests whose result a reduction or a row group consumes later."""
    from numbax import lax

    x = np.arange(24.0).reshape(2, 3, 4) * 0.5
    fns = {
        "flat": lambda x: x + 100 * lax.broadcasted_iota(np.float64, (2, 3, 4), 1)
        + lax.broadcasted_iota(np.float64, (2, 3, 4), 2),
        "broadcast": lambda x: x[:, :, :1] * lax.broadcasted_iota(np.int32, (2, 3, 4), 0),
        "reduced_after": lambda x: jnp.sum(x * lax.broadcasted_iota(np.float64, (2, 3, 4), 2),
                                           axis=1),
        "rows_after": lambda x: softmax(x + lax.broadcasted_iota(np.float64, (2, 3, 4), 2)),
        "float": lambda x: lax.iota(np.float32, 24).reshape(2, 3, 4) + x,
    }
    i0, i1, i2 = np.indices((2, 3, 4))
    want = {
        "flat": x + 100 * i1 + i2,
        "broadcast": x[:, :, :1] * i0,
        "reduced_after": np.sum(x * i2, axis=1),
        "rows_after": _np_softmax(x + i2),
        "float": np.arange(24, dtype=np.float32).reshape(2, 3, 4) + x,
    }[case]
    f = numbax.jit(fns[case])
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-12)
    assert "lw.kc.iota" not in f.lower(x).as_text()


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_bitcast_fuses_as_a_scalar_view():
    from numbax import lax

    x = np.linspace(-2, 2, 1001, dtype=np.float32)
    f = numbax.jit(lambda x: lax.bitcast_convert_type(x * 2, np.int32) + 1)
    np.testing.assert_array_equal(np.asarray(f(x)), (x * 2).view(np.int32) + 1)
    assert _kernels(f.lower(x).as_text()) == 1


def test_scalars_between_array_equations_are_hoisted():
    """A scalar computed from inputs between two array equations joins no array nest and
    does not end the one before it."""
    def f(x, s):
        a = jnp.exp(x)
        t = jnp.sin(s) * 2.0  # scalar work in the middle
        return a * t + x

    x, s = np.linspace(0, 1, 50), np.float64(0.3)
    text = numbax.jit(f).lower(x, s).as_text()
    assert _kernels(text) == 2  # the scalar nest, then one loop
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, s)), np.exp(x) * np.sin(s) * 2 + x,
                               rtol=1e-14)


def test_uncast_float32_forms_are_float32_in_numba():
    """loops.KEEPS_FLOAT32 forms render without a cast: Numba must type each as float32."""
    from numba import njit

    from numbax._src import core
    from numbax._src.compiler import registry
    from numbax._src.compiler.cpu import loops
    from numbax._src.compiler.cpu.runtime import fastmath as fm

    f32 = core.ShapedArray((), np.dtype(np.float32))
    for prim in loops.KEEPS_FLOAT32:
        arity = 1 if prim.name in ("neg", "square", "exp", "log", "log1p", "expm1", "tanh",
                                   "logistic") else 2
        eqn = core.JaxprEqn(prim, [core.Var(f32) for _ in range(arity)], [core.Var(f32)], {})
        assert loops.keeps_dtype(eqn)
        expr = registry.lowering(prim, "cpu").scalar(["x", "y"][:arity], eqn)
        scope = {"np": np, "fm": fm}
        exec(f"def form(x, y):\n    return {expr}\n", scope)  # noqa: S102
        fn = njit(scope["form"])
        fn(np.float32(0.5), np.float32(0.25))
        assert str(fn.nopython_signatures[0].return_type) == "float32", (prim.name, expr)
