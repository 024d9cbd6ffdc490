"""jax.checkpoint's policies, checkpoint_name and print_saved_residuals: the residuals each
policy keeps and the gradients, compared with JAX's recorded ones
(tests/data/checkpoint_jax_reference.json); recomputation counted; bad input."""
from __future__ import annotations

import io
import json
import pathlib
from contextlib import redirect_stdout
from types import SimpleNamespace

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import ad_checkpoint, lax
from tests.data.checkpoint_programs import PROGRAMS
from tests.data.reference_tree import assert_matches
from tests.test_custom_derivatives import _count_sin

REFERENCE = json.loads(
    (pathlib.Path(__file__).parent / "data" / "checkpoint_jax_reference.json").read_text())
MODULES = SimpleNamespace(jax=numbax, jnp=jnp, ad_checkpoint=ad_checkpoint)
# Deliberate difference (docs/sharp_bits.md): numbax's linearization keeps a Python-scalar
# multiplier as a residual literal.


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _split_lines(tree):
    """Residual listings compared line by line (the line endings aside)."""
    if isinstance(tree, dict):
        return {k: _split_lines(v) for k, v in tree.items()}
    return _lines(tree) if isinstance(tree, str) else tree



@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_residuals_and_gradients_match_jax(name):
    got, want = PROGRAMS[name](MODULES), REFERENCE[name]
    if name == "plain_and_arguments":
        assert _lines(got.pop("literal")) == ["f64[] from a literal",
                                              *_lines(want.pop("literal"))]
    assert_matches(_split_lines(got), _split_lines(want), name)


@pytest.mark.parametrize("policy, backward_sins", [
    (None, 2), (numbax.checkpoint_policies.everything_saveable, 0),
    (numbax.checkpoint_policies.save_only_these_names("inner"), 1)])
def test_policy_decides_what_the_backward_pass_recomputes(monkeypatch, policy, backward_sins):
    count = _count_sin(monkeypatch)

    def f(x):  # the backward pass needs cos(x), cos(y1), cos(y2): y1 and y2, not the output
        y1 = ad_checkpoint.checkpoint_name(jnp.sin(x), "inner")
        return jnp.sin(jnp.sin(y1))

    out, f_vjp = numbax.vjp(numbax.checkpoint(f, policy=policy), 0.7)
    assert count[0] == 3
    (g,) = f_vjp(1.0)
    assert count[0] == 3 + backward_sins
    y1 = np.sin(0.7)
    np.testing.assert_allclose(g, np.cos(np.sin(y1)) * np.cos(y1) * np.cos(0.7), rtol=1e-15)


def test_checkpoint_with_control_flow_inside_differentiates():
    def f(x):
        y = lax.cond(x > 0, jnp.sin, jnp.cos, x)
        z = lax.scan(lambda c, _: (jnp.sin(c) * c, None), y, None, length=3)[0]
        return numbax.checkpoint(jnp.tanh)(z) * x

    def f_scan(x):
        return lax.scan(lambda c, _: (jnp.sin(c) * c, None), x, None, length=3)[0] * x

    for policy in (None, numbax.checkpoint_policies.dots_saveable):
        g = numbax.grad(numbax.checkpoint(f, policy=policy))
        for x in (0.5, -0.4):
            np.testing.assert_allclose(g(x), numbax.grad(f)(x), rtol=1e-14)
        # (jit of the cond's gradient trips a compiler bug outside checkpoint: scan only here)
        g_scan = numbax.jit(numbax.grad(numbax.checkpoint(f_scan, policy=policy)))
        np.testing.assert_allclose(g_scan(0.5), numbax.grad(f_scan)(0.5), rtol=1e-14)


def test_debug_print_runs_again_when_recomputed(capsys):
    def f(x):
        numbax.debug.print("x={}", x)
        return jnp.sin(x)

    numbax.grad(numbax.checkpoint(f))(1.0)
    assert capsys.readouterr().out == "x=1.0\nx=1.0\n"
    numbax.grad(numbax.checkpoint(f, policy=numbax.checkpoint_policies.everything_saveable))(1.0)
    assert capsys.readouterr().out == "x=1.0\n"


def test_checkpoint_name_is_the_identity_everywhere():
    name = ad_checkpoint.checkpoint_name
    x = np.linspace(-1, 1, 5)
    f = lambda v: jnp.sum(name(jnp.sin(v), "s") ** 2)  # noqa: E731
    np.testing.assert_allclose(numbax.jit(f)(x), np.sum(np.sin(x) ** 2), rtol=1e-15)
    np.testing.assert_allclose(numbax.grad(f)(x), 2 * np.sin(x) * np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(numbax.vmap(lambda v: name(v * 2, "d"))(x), x * 2)
    tree = name({"a": 1.0, "b": (x,)}, "t")
    assert float(tree["a"]) == 1.0 and np.array_equal(tree["b"][0], x)


def test_policy_answers_and_bad_input():
    cp = numbax.checkpoint_policies
    with pytest.raises(TypeError, match="name is a int"):
        ad_checkpoint.checkpoint_name(1.0, 3)
    with pytest.raises(TypeError, match="a name is a int"):
        cp.save_only_these_names(3)
    with pytest.raises(ValueError, match="should not intersect"):
        cp.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"], names_which_can_be_offloaded=["a"],
            offload_src="device", offload_dst="pinned_host")
    with pytest.raises(ValueError, match="should be a boolean"):
        both = cp.save_from_both_policies(lambda *a, **k: ad_checkpoint.Saveable, cp.dots_saveable)
        numbax.grad(numbax.checkpoint(jnp.sin, policy=both))(1.0)
    with pytest.raises(TypeError, match="the policy returned 'yes' for sin"):
        numbax.grad(numbax.checkpoint(jnp.sin, policy=lambda *a, **k: "yes"))(1.0)
    answers = (ad_checkpoint.Recompute, ad_checkpoint.Saveable,
               ad_checkpoint.Offloadable(src="device", dst="pinned_host"))
    for answer in answers:
        g = numbax.grad(numbax.checkpoint(lambda x: jnp.sin(jnp.sin(x)),
                                          policy=lambda *a, answer=answer, **k: answer))
        np.testing.assert_allclose(g(0.3), np.cos(np.sin(0.3)) * np.cos(0.3), rtol=1e-15)
    with pytest.raises(TypeError, match="f is a int"):
        ad_checkpoint.print_saved_residuals(3, 1.0)


def test_print_saved_residuals_prints_one_line_per_residual():
    out = io.StringIO()
    with redirect_stdout(out):
        ad_checkpoint.print_saved_residuals(numbax.checkpoint(lambda x: jnp.sin(jnp.sin(x))),
                                            np.ones(3))
    assert out.getvalue() == "f64[3] from the argument x\n"
