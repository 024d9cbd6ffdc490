"""numbax.install_as_jax and `python -m numbax.as_jax`: code that does `import jax` gets numbax's
modules, JAX's 32-bit defaults, clear errors for what numbax lacks, and a refusal when JAX
itself is already imported."""
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import numbax
from numbax._src import jax_alias
from tests.compat.as_jax import numbax_as_jax


def test_jax_module_names_give_numbax_modules():
    with numbax_as_jax():
        import jax
        import jax.numpy as jnp
        import jax.scipy.special
        from jax import lax, tree_util
        from jax.example_libraries import stax

        assert jax is numbax and jnp is numbax.numpy and lax is numbax.lax
        assert tree_util is numbax.tree_util and stax is numbax.example_libraries.stax
        assert jax.scipy.special is numbax.scipy.special
        assert sys.modules["jax.numpy"] is numbax.numpy
        assert jnp.ones(3).dtype == np.float32  # JAX's defaults while installed
        assert numbax.numpy.__name__ == "numbax.numpy"  # numbax's own names are untouched
    assert "jax.numpy" not in sys.modules or sys.modules["jax.numpy"] is not numbax.numpy


def test_missing_and_private_modules_raise_module_not_found():
    with numbax_as_jax():
        with pytest.raises(ModuleNotFoundError, match="jax._src.*private") as err:
            import jax._src.core  # noqa: F401
        assert err.value.name == "jax._src"
        with pytest.raises(ModuleNotFoundError, match="numbax has no module 'numbax.nope'"):
            import jax.nope  # noqa: F401


def test_refuses_when_jax_itself_is_imported(monkeypatch):
    fake = types.ModuleType("jax")
    fake.__file__ = "/somewhere/jax/__init__.py"
    monkeypatch.setitem(sys.modules, "jax", fake)
    x64 = numbax.config.jax_enable_x64
    with pytest.raises(RuntimeError, match="already imported.*python -m numbax.as_jax"):
        numbax.install_as_jax()
    assert not jax_alias.installed_as_jax() and sys.modules["jax"] is fake
    assert numbax.config.jax_enable_x64 == x64  # nothing changed


def test_install_twice_is_harmless():
    with numbax_as_jax():
        numbax.install_as_jax()
        assert sys.meta_path.count(jax_alias._FINDER) == 1
    assert not jax_alias.installed_as_jax()


def test_environment_choice_of_x64_is_respected(monkeypatch):
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    assert numbax.config.set_by_environment("jax_enable_x64")
    monkeypatch.delenv("JAX_ENABLE_X64")
    monkeypatch.delenv("NUMBAX_ENABLE_X64", raising=False)
    assert not numbax.config.set_by_environment("jax_enable_x64")


def _run(args, tmp_path, env_x64=None):
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("JAX_ENABLE_X64", "NUMBAX_ENABLE_X64")}
    if env_x64 is not None:
        env["JAX_ENABLE_X64"] = env_x64
    env["PYTHONPATH"] = str(__import__("pathlib").Path(numbax.__file__).parents[1])
    return subprocess.run([sys.executable, "-m", "numbax.as_jax", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)


def test_python_m_numbax_as_jax_runs_a_script_unchanged(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import jax
        import jax.numpy as jnp
        import helper  # the script's own directory is on sys.path, as with `python train.py`
        grad = jax.grad(lambda w: jnp.sum((w * 2.0 - 1.0) ** 2))(jnp.ones(3))
        print(jax.__name__, grad.dtype, grad.tolist(), sys.argv[1:], helper.VALUE, __name__)
    """))
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    done = _run([str(script), "--lr", "0.1"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["numbax", "float32", "[4.0,", "4.0,", "4.0]",
                                   "['--lr',", "'0.1']", "7", "__main__"]
    assert _run([str(script)], tmp_path, env_x64="1").stdout.split()[1] == "float64"


def test_python_m_numbax_as_jax_usage_errors(tmp_path, capsys, monkeypatch):
    from numbax.as_jax import main

    monkeypatch.chdir(tmp_path)
    assert main([]) == 2 and "usage" in capsys.readouterr().err
    assert main(["nope.py"]) == 2 and "no such script 'nope.py'" in capsys.readouterr().err
    assert main(["-m"]) == 2 and "-m needs a module name" in capsys.readouterr().err
    assert main(["--help"]) == 0 and "usage" in capsys.readouterr().out
    assert not jax_alias.installed_as_jax()  # nothing installed on a usage error


def test_as_jax_runs_a_module_with_dash_m(tmp_path, monkeypatch, capsys):
    from numbax.as_jax import main

    (tmp_path / "jaxmod.py").write_text(
        "import sys, jax.numpy as jnp\nprint(jnp.arange(3).dtype, sys.argv[1:])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    with numbax_as_jax():
        assert main(["-m", "jaxmod", "--flag"]) == 0
    assert capsys.readouterr().out.split() == ["int32", "['--flag']"]


def test_lax_linalg_is_an_attribute_after_a_plain_import():
    """`import jax` then `jax.lax.linalg.cholesky(...)` works in JAX without importing the
    submodule: a fresh interpreter, against numpy's Cholesky."""
    code = textwrap.dedent("""
        import numpy as np
        import numbax as jax
        a = np.array([[4.0, 2.0], [2.0, 3.0]])
        print(np.abs(np.asarray(jax.lax.linalg.cholesky(a)) - np.linalg.cholesky(a)).max())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert float(out) < 1e-12
