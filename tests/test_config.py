"""numbax.config: every JAX option name (recorded from JAX) is accepted, the ones numbax honours
change behaviour, bad values and bad environment variables raise clear errors, and the
top-level context managers work as JAX's."""
import json
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.config import config
from numbax._src.config_options import JAX_ALIASES, JAX_OPTIONS

REF = json.loads((pathlib.Path(__file__).parent / "data" /
                  "config_jax_reference.json").read_text())
HONOURED = {"jax_enable_x64", "jax_disable_jit", "jax_debug_nans", "jax_enable_checks"}


@pytest.mark.parametrize("name", sorted(REF["defaults"]))
def test_every_jax_option_is_accepted(name):
    default = REF["defaults"][name]
    if name in JAX_ALIASES or name in HONOURED:
        assert hasattr(config, name)
        return
    assert JAX_OPTIONS[name].default == default
    assert config.read(name) == default and getattr(config, name) == default
    config.update(name, default)
    with config.override(name, default):
        assert getattr(config, name) == default
    assert name in config.values


@pytest.mark.parametrize("state", REF["states"])
def test_top_level_context_managers_exist(state):
    cm = getattr(numbax, state)
    assert cm.value == getattr(config, cm.name)


def test_unknown_option_and_bad_values_name_the_option():
    with pytest.raises(AttributeError, match="unrecognized config option 'jax_enable_x46'"):
        config.update("jax_enable_x46", True)
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion has value 'maybe', expected "
                                         "one of 'allow', 'warn', 'raise'"):
        config.update("jax_numpy_rank_promotion", "maybe")
    with pytest.raises(ValueError, match="jax_debug_infs has value 'perhaps', expected a boolean"):
        config.update("jax_debug_infs", "perhaps")
    with pytest.raises(ValueError, match="jax_num_cpu_devices has value 0, expected an integer "
                                         ">= 1"):
        config.update("jax_num_cpu_devices", 0)
    with pytest.raises(ValueError, match="jax_default_device has value 3"):
        config.update("jax_default_device", 3)
    with pytest.raises(ValueError, match="cpu_threads has value -1"):
        config.update("cpu_threads", -1)
    with pytest.raises(ValueError, match="expected a boolean"):
        numbax.debug_nans("yes please")
    with pytest.raises(ValueError, match="jax_enable_checks has value 'true'"):
        config.update("jax_enable_checks", "true")  # strings convert only from env/flags
    with pytest.raises(ValueError, match="jax_num_cpu_devices has value '2'"):
        config.update("jax_num_cpu_devices", "2")
    assert config.jax_numpy_rank_promotion == "allow"


def test_only_default_options_refuse_other_values():
    config.update("jax_threefry_partitionable", True)
    with pytest.raises(ValueError, match="supports only JAX's default True"):
        config.update("jax_threefry_partitionable", False)
    with pytest.raises(ValueError, match="only JAX's default 'threefry2x32'"):
        config.update("jax_default_prng_impl", "rbg")
    with pytest.raises(ValueError, match="jax_default_prng_impl has value 'mt19937'"):
        config.update("jax_default_prng_impl", "mt19937")
    assert config.jax_threefry_partitionable is True


def test_context_managers_and_decorators():
    assert numbax.enable_x64.value is True
    with numbax.enable_x64(False):
        assert jnp.ones(2).dtype == np.float32 and numbax.enable_x64.value is False
    assert jnp.ones(2).dtype == np.float64

    @numbax.enable_x64(False)
    def make():
        return jnp.arange(3)

    assert make().dtype == np.int32
    with numbax.debug_nans():
        assert config.jax_debug_nans is True
    with pytest.raises(TypeError, match="requires an argument"):
        numbax.numpy_rank_promotion()
    with pytest.raises(TypeError, match="read its value"):
        bool(numbax.debug_nans)
    with numbax.transfer_guard("disallow"):
        assert {config.jax_transfer_guard, config.jax_transfer_guard_host_to_device,
                config.jax_transfer_guard_device_to_host} == {"disallow"}
    assert config.jax_transfer_guard_host_to_device is None
    with numbax.checking_leaks():
        assert config.jax_check_tracer_leaks is True
    with numbax.default_matmul_precision("float32"):
        x = np.arange(6.0).reshape(2, 3)
        np.testing.assert_array_equal(np.asarray(jnp.ones((2, 2)) @ x), np.ones((2, 2)) @ x)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_debug_infs_names_the_primitive():
    assert np.isinf(float(jnp.log(0.0)))
    with numbax.debug_infs(True):
        with pytest.raises(FloatingPointError, match="inf.* encountered in log"):
            jnp.log(jnp.zeros(2))
        assert float(jnp.log(1.0)) == 0.0
        np.testing.assert_equal(np.asarray(jnp.sqrt(-jnp.ones(1))), [np.nan])  # NaN is fine
    with numbax.debug_nans(True):
        assert np.isinf(float(jnp.log(0.0)))  # inf is fine


def test_num_cpu_devices_and_default_device():
    assert config.jax_num_cpu_devices == numbax.device_count()
    with config.override("jax_num_cpu_devices", 3):
        devs = numbax.devices()
        assert len(devs) == 3 and config.num_cpu_devices == 3
        with numbax.default_device(devs[2]):
            assert jnp.ones(2).device == devs[2]
            assert (jnp.ones(2) + 1).device == devs[2]
        assert jnp.ones(2).device == devs[0]
    config.update("jax_num_cpu_devices", -1)  # JAX's "unset"
    assert config.num_cpu_devices >= 1


def test_platforms_and_cache_dir_aliases():
    saved = config.platforms
    try:
        config.update("jax_platforms", "cpu")
        assert config.platforms == "cpu" and config.jax_platforms == "cpu"
        assert numbax.default_backend() == "cpu"
        config.update("jax_platforms", None)
        assert config.jax_platforms is None and config.platforms == ""
    finally:
        config.update("platforms", saved)
    with config.override("jax_compilation_cache_dir", "/tmp/elsewhere"):
        assert config.cache_dir == "/tmp/elsewhere"
    with config.override("jax_enable_compilation_cache", False):
        assert config.compilation_cache is False


def test_parse_flags_with_absl(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["prog", "--jax_numpy_rank_promotion=warn",
                                      "--nojax_enable_checks", "--other=1", "--",
                                      "--jax_debug_infs"])
    before = config.jax_enable_checks
    try:
        config.parse_flags_with_absl()
        assert config.jax_numpy_rank_promotion == "warn"
        assert config.jax_enable_checks is False and config.jax_debug_infs is False
    finally:
        config.update("jax_numpy_rank_promotion", "allow")
        config.update("jax_enable_checks", before)


def test_config_with_absl(monkeypatch):
    monkeypatch.setitem(sys.modules, "absl", None)  # absl-py missing, installed or not
    with pytest.raises(ImportError, match="needs absl-py"):
        config.config_with_absl()
    defined, after_init = {}, []
    flags = types.SimpleNamespace(FLAGS={})

    def define(name, default, help_text):
        defined[name] = default
        flags.FLAGS[name] = types.SimpleNamespace(present=False, value=default)

    flags.DEFINE_bool = flags.DEFINE_integer = flags.DEFINE_float = define
    flags.DEFINE_string = define
    app = types.SimpleNamespace(call_after_init=after_init.append)
    absl = types.ModuleType("absl")
    absl.app, absl.flags = app, flags
    monkeypatch.setitem(sys.modules, "absl", absl)
    config.config_with_absl()
    assert set(defined) == set(JAX_OPTIONS) and defined["jax_numpy_rank_promotion"] == "allow"
    flags.FLAGS["jax_numpy_rank_promotion"] = types.SimpleNamespace(present=True, value="raise")
    try:
        after_init[0]()
        assert config.jax_numpy_rank_promotion == "raise"
    finally:
        config.update("jax_numpy_rank_promotion", "allow")


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    import os

    full = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "NUMBAX_NUM"))}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=300)


def test_environment_variables():
    code = ("import numbax, numbax.numpy as jnp\n"
            "print(jnp.ones(1).dtype, numbax.config.jax_numpy_rank_promotion)\n"
            "try:\n    numbax.devices()\nexcept ValueError as e:\n    print(e)\n")
    out = _run(code, JAX_ENABLE_X64="0", JAX_NUMPY_RANK_PROMOTION="raise",
               NUMBAX_NUM_CPU_DEVICES="abc")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "float32 raise"
    assert lines[1] == ("environment variable NUMBAX_NUM_CPU_DEVICES has value 'abc', expected "
                        "an integer (e.g. 4).")
    out = _run("import numbax\nprint(numbax.device_count())", NUMBAX_NUM_CPU_DEVICES="4.0")
    assert "NUMBAX_NUM_CPU_DEVICES has value '4.0', expected an integer" in out.stderr
    out = _run("import numbax\nprint(numbax.device_count())", JAX_NUM_CPU_DEVICES="3",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    assert out.stdout.strip() == "3", out.stderr
    out = _run("import numbax", JAX_ENABLE_X64="maybe")
    assert "JAX_ENABLE_X64 has value 'maybe', expected a boolean" in out.stderr


def test_hot_reads_what_getattr_reads():
    """config.hot (per-call code's lookup) gives the updated value, this thread's override,
    and another thread's view while an override is active elsewhere; a bad environment value
    raises as the attribute does."""
    import threading

    from numbax._src.config import config

    previous = config.cpu_threads
    try:
        config.update("cpu_threads", 3)
        assert config.hot("cpu_threads") == 3
        seen = []
        inside, release = threading.Event(), threading.Event()

        def other():
            with config.override("cpu_threads", 5):
                seen.append(config.hot("cpu_threads"))
                inside.set()
                release.wait(10)

        t = threading.Thread(target=other)
        t.start()
        inside.wait(10)
        assert config.hot("cpu_threads") == 3  # the override is the other thread's only
        release.set()
        t.join()
        assert seen == [5]
    finally:
        config.update("cpu_threads", previous)
    out = _run("import numbax\nfrom numbax._src.config import config\n"
               "config.hot('cpu_threads')", NUMBAX_CPU_THREADS="two")
    assert out.returncode != 0 and "NUMBAX_CPU_THREADS has value 'two'" in out.stderr
