"""Devices and host transfers: listing, env-configured virtual CPU devices, device_put/get."""
import os
import subprocess
import sys

import numpy as np
import pytest

import numbax


def test_default_single_cpu_device():
    devs = numbax.devices()
    assert repr(devs[0]) == "CpuDevice(id=0)"
    from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

    # a GPU host's default backend is its GPU, as in JAX; devices() still lists the CPU's
    assert numbax.default_backend() == ("gpu" if cuda_runtime.gpu_usable() else "cpu")
    assert numbax.device_count() == len(devs) == numbax.local_device_count()
    assert numbax.process_index() == 0


@pytest.mark.parametrize("env", [{"NUMBAX_NUM_CPU_DEVICES": "4"},
                                 {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}])
def test_virtual_device_count_from_environment(env):
    code = "import numbax; print(numbax.device_count(), numbax.devices()[-1])"
    clean = {k: v for k, v in os.environ.items()
             if k not in ("NUMBAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env},
                         capture_output=True, text=True, check=True).stdout.split()
    n = int(next(iter(env.values()))[-1])
    assert out == [str(n), f"CpuDevice(id={n - 1})"]


def test_device_put_and_get_round_trip():
    tree = {"a": np.arange(3.0), "b": [1.0, np.ones(2, np.float32)]}
    placed = numbax.device_put(tree, numbax.devices()[0])
    assert isinstance(placed["a"], numbax.Array)
    assert placed["a"].device == numbax.devices()[0]
    back = numbax.device_get(placed)
    np.testing.assert_array_equal(back["a"], tree["a"])
    assert back["b"][1].dtype == np.float32
    assert numbax.block_until_ready(placed) is placed


def test_device_put_rejects_non_device():
    with pytest.raises(TypeError, match="device_put: device is a str"):
        numbax.device_put(np.ones(2), "cpu:0")


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="backend 'tpu'"):
        numbax.devices("tpu")


def test_process_helpers_and_environment_info():
    assert numbax.process_indices() == [numbax.process_index()] == numbax.host_ids()
    assert numbax.host_count() == numbax.process_count() == 1 and numbax.host_id() == 0
    text = numbax.print_environment_info(return_string=True)
    import numba

    assert f"numba:  {numba.__version__}" in text and f"numpy:  {np.__version__}" in text
    assert f"cpu-{numbax.device_count()}" in text


def test_device_is_the_base_class_of_devices():
    assert all(isinstance(d, numbax.Device) for d in numbax.devices())
    assert numbax.devices()[0].platform == "cpu"
