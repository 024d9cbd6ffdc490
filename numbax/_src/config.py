"""Flags that change numbax's behaviour; the only module that reads environment variables.

numbax.config takes numbax's options and every option name of JAX 0.10.2 (config_options.py
says which JAX options numbax honours, which it accepts without effect and which only take
JAX's default). Options read the environment at import: NUMBAX_<NAME> first, then JAX's
JAX_<NAME>; a malformed value raises ValueError naming the variable when the option is read.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from numbax._src.config_options import JAX_ALIASES, JAX_OPTIONS, JaxOption

_TRUE = ("y", "yes", "t", "true", "on", "1")
_FALSE = ("n", "no", "f", "false", "off", "0")
_CPU_MATMUL_CHOICES = ("auto", "numbax", "blas")
# The options that change what a trace produces: jit's cache keys hold their values. Not
# jax_debug_nans (as in JAX): an executable compiled with it on (donating nothing) is reused
# after it is turned off, until the function's cache is cleared (docs/buffer_donation.md).
TRACE_CONTEXT = ("jax_enable_x64", "jax_numpy_dtype_promotion", "jax_numpy_rank_promotion")


class _EnvError:
    """A malformed environment variable: raised when its option is read, not at import."""

    def __init__(self, message: str) -> None:
        self.message = message

    def error(self) -> ValueError:
        return ValueError(self.message)


def _parse_bool(value: Any, what: str, text: bool = False) -> bool:
    if isinstance(value, str) and text:
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    elif value in (True, False) and not isinstance(value, float):  # bool, np.bool_, 0, 1
        return bool(value)
    raise ValueError(f"{what} has value {value!r}, expected a boolean (True/False, or one of "
                     f"{', '.join(_TRUE + _FALSE)}).")


def _parse_int(value: Any, what: str, minimum: int | None = None, text: bool = False) -> int:
    if isinstance(value, str) and text:
        try:
            value = int(value.strip(), 10)
        except ValueError:
            raise ValueError(f"{what} has value {value!r}, expected an integer "
                             f"(e.g. {max(minimum or 0, 4)}).") from None
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise ValueError(f"{what} has value {value!r}, expected an integer.")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} has value {value}, expected an integer >= {minimum}.")
    return value


def _parse_seconds(value: Any, what: str, text: bool) -> float:
    if isinstance(value, str) and text:
        value = value.strip()
    try:
        seconds = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        seconds = None
    if seconds is None or isinstance(value, str) and not text or not seconds >= 0:
        raise ValueError(f"{what} has value {value!r}, expected a number of seconds >= 0 "
                         "(0 waits forever).")
    return seconds


def _parse_jax(name: str, option: JaxOption, value: Any, what: str, text: bool) -> Any:
    """Validates a value of one of JAX's options (config_options.JAX_OPTIONS); `text`: the
    value comes from an environment variable or a command-line flag, so strings convert."""
    if value is None and option.kind != "bool":
        return None
    if option.kind == "bool":
        value = _parse_bool(value, what, text)
    elif option.kind == "int":
        value = _parse_int(value, what, text=text)
    elif option.kind == "float":
        if isinstance(value, str) and not text:
            raise ValueError(f"{what} has value {value!r}, expected a number.")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{what} has value {value!r}, expected a number.") from None
    elif option.kind == "enum":
        lowered = {str(c).lower(): c for c in option.choices}
        text = getattr(value, "name", value)  # JAX's enum members name themselves
        if not isinstance(text, str) or text.lower() not in lowered:
            raise ValueError(f"{what} has value {value!r}, expected one of "
                             f"{', '.join(map(repr, option.choices))}.")
        value = lowered[text.lower()]
    elif option.kind == "device":
        value = _parse_device(value, what)
    elif not isinstance(value, str):
        raise ValueError(f"{what} has value {value!r}, expected a string or None.")
    if option.effect == "default" and value != option.default:
        raise ValueError(
            f"{what} has value {value!r}, but numbax supports only JAX's default "
            f"{option.default!r} for this option (another value would change results in a "
            "way numbax does not implement). Leave it at its default.")
    return value


def _parse_device(value: Any, what: str) -> Any:
    if isinstance(value, str):
        if value.lower() not in ("cpu", "gpu", "cuda"):
            raise ValueError(f"{what} has value {value!r}, expected a Device, None, or a "
                             "platform name ('cpu', 'gpu', 'cuda').")
        return value.lower()
    if not (hasattr(value, "platform") and hasattr(value, "id")):
        raise ValueError(f"{what} has value {value!r}, expected a Device (from "
                         "numbax.devices()), None, or a platform name.")
    return value


def _parse_native(name: str, value: Any, what: str, text: bool) -> Any:
    """Validates a value of one of numbax's own options."""
    if name in ("jax_enable_x64", "jax_disable_jit", "jax_debug_nans", "jax_enable_checks",
                "compilation_cache", "cuda_graphs", "cuda_epilogues", "cpu_epilogues",
                "cpu_native_pool", "cpu_amx", "crossproc_shm", "cpu_compile_ahead"):
        return _parse_bool(value, what, text)
    if name == "num_cpu_devices":
        return _parse_int(value, what, minimum=1, text=text)
    if name == "cpu_threads":
        return _parse_int(value, what, minimum=0, text=text)
    if name == "worker_timeout":
        return _parse_seconds(value, what, text)
    if name == "compilation_cache_max_size":
        return _parse_int(value, what, minimum=-1, text=text)
    if name == "executable_cache_size":
        return _parse_int(value, what, minimum=1, text=text)
    if name == "cpu_matmul" and value not in _CPU_MATMUL_CHOICES:
        raise ValueError(f"{what} has value {value!r}, expected one of "
                         f"{', '.join(map(repr, _CPU_MATMUL_CHOICES))}.")
    if name in ("cache_dir", "platforms") and not isinstance(value, str):
        raise ValueError(f"{what} has value {value!r}, expected a string.")
    return value


def _parse(name: str, value: Any, what: str, text: bool = False) -> Any:
    option = JAX_OPTIONS.get(name)
    if option is not None:
        return _parse_jax(name, option, value, what, text)
    return _parse_native(name, value, what, text)


def _from_env(name: str, env_names: list[str], default: Any) -> Any:
    """The option's value from the first set variable of env_names, else default."""
    for env in env_names:
        raw = os.environ.get(env)
        if raw is None or raw == "":
            continue
        try:
            return _parse(name, raw, f"environment variable {env}", text=True)
        except ValueError as err:
            return _EnvError(str(err))
    return default


def _xla_force_device_count() -> int | None | _EnvError:
    for token in os.environ.get("XLA_FLAGS", "").split():
        if token.startswith("--xla_force_host_platform_device_count="):
            raw = token.split("=", 1)[1]
            try:
                return _parse_int(raw, "XLA_FLAGS --xla_force_host_platform_device_count",
                                  minimum=1, text=True)
            except ValueError as err:
                return _EnvError(str(err))
    return None


def _default_cache_dir() -> str:
    explicit = os.environ.get("NUMBAX_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "numbax")


def _env_names(name: str) -> list[str]:
    short = name[4:] if name.startswith("jax_") else name
    return [f"NUMBAX_{short.upper()}", name.upper()]


def _defaults() -> dict[str, Any]:
    values: dict[str, Any] = {
        "jax_enable_x64": _from_env("jax_enable_x64", _env_names("jax_enable_x64"), True),
        "jax_disable_jit": _from_env("jax_disable_jit", _env_names("jax_disable_jit"), False),
        "jax_debug_nans": _from_env("jax_debug_nans", _env_names("jax_debug_nans"), False),
        "jax_enable_checks": _from_env("jax_enable_checks", _env_names("jax_enable_checks"),
                                       False),
        "compilation_cache": _from_env("compilation_cache", ["NUMBAX_COMPILATION_CACHE"], True),
        "cache_dir": _default_cache_dir(),
        # Disk cache cap in bytes (least recently used entries evicted); -1: no cap, 0: off.
        "compilation_cache_max_size": _from_env("compilation_cache_max_size",
                                                ["NUMBAX_COMPILATION_CACHE_MAX_SIZE"], 1 << 30),
        # Executables each jitted function keeps in memory (least recently used dropped).
        "executable_cache_size": _from_env("executable_cache_size",
                                           ["NUMBAX_EXECUTABLE_CACHE_SIZE"], 512),
        "num_cpu_devices": _from_env("num_cpu_devices",
                                     ["NUMBAX_NUM_CPU_DEVICES", "JAX_NUM_CPU_DEVICES"],
                                     _xla_force_device_count() or 1),
        # Seconds a pmap/shard_map call waits for a worker that makes no progress (0: forever).
        "worker_timeout": _from_env("worker_timeout", ["NUMBAX_WORKER_TIMEOUT"], 300.0),
        # Reduce large psums of processes on one node through MPI shared memory
        # (parallel/node_reduce.py); off: MPI's allreduce. Read when a group's communicator
        # is created; every process of the group must agree, else they all take MPI's.
        "crossproc_shm": _from_env("crossproc_shm", ["NUMBAX_CROSSPROC_SHM"], True),
        "platforms": _from_env("platforms", ["NUMBAX_PLATFORMS", "JAX_PLATFORMS",
                                             "JAX_PLATFORM_NAME"], ""),
        # Threads of compiled CPU code: 0 = automatic (Numba's pool for large parallel loops
        # and products, BLAS single-threaded while Numba's threads may spin); n >= 1 runs
        # both pools with n threads where work is large enough to share.
        "cpu_threads": _from_env("cpu_threads", ["NUMBAX_CPU_THREADS"], 0),
        # Matrix products of compiled CPU code: "auto" (numbax's AVX-512 GEMM where numpy's
        # BLAS lacks AVX-512 kernels and the host has them), "numbax" or "blas" (np.dot).
        "cpu_matmul": _from_env("cpu_matmul", ["NUMBAX_CPU_MATMUL"], "auto"),
        # Replay GPU programs whose launches outweigh their argument copies as CUDA graphs
        # (compiler/cuda/runtime/graphs.py); read when a program is compiled.
        "cuda_graphs": _from_env("cuda_graphs", ["NUMBAX_CUDA_GRAPHS"], True),
        # Fuse `x @ w + b` (and its ReLU) into one cuBLASLt call on the GPU where nvmath-python
        # is installed (compiler/epilogues.py); read when a program is compiled.
        "cuda_epilogues": _from_env("cuda_epilogues", ["NUMBAX_CUDA_EPILOGUES"], True),
        # Apply dense layers' bias adds and activations, and updates `w - lr * g`, inside
        # their CPU products (compiler/epilogues.py); read when a program is compiled.
        "cpu_epilogues": _from_env("cpu_epilogues", ["NUMBAX_CPU_EPILOGUES"], True),
        # On a busy machine, run the parallel arm of numbax's GEMM, of fused kernels over
        # independent rows and of reductions (full, or over the leading axes) on the native pool
        # (cpu/runtime/native_pool.py) rather than Numba's OpenMP threads.
        "cpu_native_pool": _from_env("cpu_native_pool", ["NUMBAX_CPU_NATIVE_POOL"], True),
        # Compile kernels' and the runtime's threaded forms in a helper process while their
        # one-thread forms run (cpu/runtime/compile_ahead.py); off: in line, at their first use.
        "cpu_compile_ahead": _from_env("cpu_compile_ahead", ["NUMBAX_CPU_COMPILE_AHEAD"], True),
        # bfloat16 matrix products on Intel AMX tiles where the host and Linux offer them
        # (cpu/runtime/gemm_amx.py); off: computed in float32. Read when a program is compiled
        # and at each eager product.
        "cpu_amx": _from_env("cpu_amx", ["NUMBAX_CPU_AMX"], True),
    }
    for name, option in JAX_OPTIONS.items():
        values[name] = _from_env(name, _env_names(name), option.default)
    return values


class Config:
    """numbax.config: `config.update(name, value)` and attribute reads (`config.jax_enable_x64`).
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_values", _defaults())
        object.__setattr__(self, "_local", threading.local())
        object.__setattr__(self, "_n_overrides", 0)  # active overrides, all threads
        object.__setattr__(self, "_lock", threading.Lock())
        self._refresh()

    def _refresh(self) -> None:
        """`_fast_ctx`: the trace context when plain jit dispatch may skip every other check
        (no override active in any thread, jit enabled, no NaN checks, no profiler trace),
        else None."""
        v = self._values
        for name in ("jax_enable_x64", "jax_disable_jit", "jax_debug_nans"):
            if isinstance(v[name], _EnvError):
                raise v[name].error()
        fast = None
        if not self._n_overrides and not v["jax_disable_jit"] and not v["jax_debug_nans"] and \
                not getattr(self, "_profiling", False):
            fast = tuple(v[name] for name in TRACE_CONTEXT)
        object.__setattr__(self, "_fast_ctx", fast)

    def _set_profiling(self, on: bool) -> None:
        """While a profiler trace runs, jitted calls take the path that records them."""
        object.__setattr__(self, "_profiling", bool(on))
        self._refresh()

    def _canonical(self, api: str, name: str) -> str:
        if name in self._values:
            return name
        alias = JAX_ALIASES.get(name)
        if alias is None:
            raise AttributeError(f"{api}: unrecognized config option {name!r}. numbax.config "
                                 "accepts numbax's options and JAX's (see numbax.config.values).")
        return alias

    def _check(self, api: str, name: str, value: Any, text: bool = False) -> tuple[str, Any]:
        key = self._canonical(api, name)
        if name == "jax_num_cpu_devices" and value in (-1, None):  # JAX's "unset"
            return key, _xla_force_device_count() or 1
        if name in ("jax_platforms", "jax_platform_name") and value is None:
            return key, ""
        if name == "jax_compilation_cache_dir" and value is None:
            return key, _default_cache_dir()
        return key, _parse(key, value, f"{api}: {name}", text)

    def update(self, name: str, value: Any) -> None:
        """Sets option `name` (numbax's or JAX's name) for all threads."""
        key, value = self._check("numbax.config.update", name, value)
        self._values[key] = value
        self._refresh()

    def __getattr__(self, name: str) -> Any:
        overrides = getattr(self._local, "overrides", None)
        if overrides and name in overrides:
            return overrides[name]
        try:
            value = self._values[name]
        except KeyError:
            alias = JAX_ALIASES.get(name)
            if alias is None or name.startswith("_"):
                raise AttributeError(f"numbax.config has no option {name!r}") from None
            value = getattr(self, alias)
            return None if value == "" and alias == "platforms" else value
        if type(value) is _EnvError:
            raise value.error()
        return value

    def hot(self, name: str) -> Any:
        """`config.<name>` (numbax's name) for code run at every call: the stored value
        directly while no override is active in any thread (the general lookup checks this
        thread's overrides first, ~0.7 us)."""
        if not self._n_overrides:
            value = self._values[name]
            if type(value) is not _EnvError:
                return value
        return getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self.update(name, value)

    def read(self, name: str) -> Any:
        """The current value of option `name` (as JAX's config.read)."""
        self._canonical("numbax.config.read", name)
        return getattr(self, name)

    _read = read

    def set_by_environment(self, name: str) -> bool:
        """Whether an environment variable chose option `name`'s starting value."""
        key = self._canonical("numbax.config.set_by_environment", name)
        return any(os.environ.get(env) for env in _env_names(key))

    @property
    def values(self) -> dict[str, Any]:
        """Every option (numbax's and JAX's names) and its current value."""
        names = [*self._values, *JAX_ALIASES]
        return {n: (v.message if isinstance(v := self._values.get(n), _EnvError) else
                    getattr(self, n)) for n in names}

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Thread-local temporary value of one option."""
        key, value = self._check("numbax.config.override", name, value)
        overrides = getattr(self._local, "overrides", None)
        if overrides is None:
            overrides = self._local.overrides = {}
        missing = object()
        previous = overrides.get(key, missing)
        overrides[key] = value
        with self._lock:
            object.__setattr__(self, "_n_overrides", self._n_overrides + 1)
            self._refresh()
        try:
            yield
        finally:
            if previous is missing:
                del overrides[key]
            else:
                overrides[key] = previous
            with self._lock:
                object.__setattr__(self, "_n_overrides", self._n_overrides - 1)
                self._refresh()

    def trace_context(self) -> tuple:
        """The options that change what a trace produces: part of every jit cache key."""
        fast = self._fast_ctx
        if fast is not None:
            return fast
        return tuple(getattr(self, name) for name in TRACE_CONTEXT)

    def parse_flags_with_absl(self) -> None:
        """Applies the --jax_* (and --nojax_*) flags of sys.argv, up to a bare "--".

        Unlike JAX: parses them itself, so absl need not be installed."""
        for arg in sys.argv[1:]:
            if arg == "--":
                break
            if not arg.startswith(("--jax", "--nojax")):
                continue
            name, eq, value = arg[2:].partition("=")
            if not eq:
                value = "false" if name.startswith("no") else "true"
                name = name[2:] if name.startswith("no") else name
            key, value = self._check("numbax.config.parse_flags_with_absl", name, value, True)
            self._values[key] = value
            self._refresh()

    def config_with_absl(self) -> None:
        """Defines an absl flag per option (JAX's names) and applies the command line's values
        once absl has parsed it (absl.app.run). Needs the absl-py package."""
        try:
            from absl import app, flags  # noqa: PLC0415
        except ImportError as err:
            raise ImportError("numbax.config.config_with_absl needs absl-py (pip install "
                              "absl-py); numbax.config.parse_flags_with_absl does not.") from err
        for name, option in JAX_OPTIONS.items():
            define = {"bool": flags.DEFINE_bool, "int": flags.DEFINE_integer,
                      "float": flags.DEFINE_float}.get(option.kind, flags.DEFINE_string)
            default = option.default if option.kind != "device" else None
            define(name, default, f"JAX option {name} (numbax: {option.effect})")

        def complete() -> None:
            for name in JAX_OPTIONS:
                flag = flags.FLAGS[name]
                if flag.present:
                    self.update(name, flag.value)

        app.call_after_init(complete)


config = Config()

# ----------------------------------------------------------------------------- context managers

_NO_DEFAULT: Any = object()


class State:
    """One option as JAX's top-level context managers (numbax.enable_x64, numbax.debug_nans):
    `with numbax.debug_nans(True): ...`, or as a decorator; `.value` is the current value."""

    def __init__(self, name: str, default_value: Any = _NO_DEFAULT) -> None:
        self._name = name
        self._default_value = default_value
        self.__name__ = name[4:] if name.startswith("jax_") else name
        self.__doc__ = f"Context manager for the {name} config option."

    @property
    def name(self) -> str:
        return self._name

    @property
    def value(self) -> Any:
        return getattr(config, self._name)

    def __call__(self, new_val: Any = _NO_DEFAULT) -> _StateContext:
        if new_val is _NO_DEFAULT:
            if self._default_value is _NO_DEFAULT:
                raise TypeError(f"Context manager for {self.__name__} config option requires an "
                                "argument representing the new value for the config option.")
            new_val = self._default_value
        config._check(f"numbax.{self.__name__}", self._name, new_val)  # validate now
        return _StateContext(self._name, new_val)

    def __bool__(self) -> bool:
        raise TypeError(f"bool() of the numbax.{self.__name__} context manager; read its value "
                        f"with numbax.{self.__name__}.value.")

    def __repr__(self) -> str:
        return f"<numbax config state {self._name}={self.value!r}>"


class _StateContext:
    __slots__ = ("name", "value", "_cm")

    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value, self._cm = name, value, None

    def __enter__(self) -> None:
        self._cm = config.override(self.name, self.value)
        self._cm.__enter__()

    def __exit__(self, *exc: Any) -> None:
        cm, self._cm = self._cm, None
        cm.__exit__(*exc)

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with config.override(self.name, self.value):
                return func(*args, **kwargs)

        return wrapper


def _bool_state(name: str) -> State:
    return State(name, True)


enable_x64 = _bool_state("jax_enable_x64")
debug_nans = _bool_state("jax_debug_nans")
debug_infs = _bool_state("jax_debug_infs")
enable_checks = _bool_state("jax_enable_checks")
log_compiles = _bool_state("jax_log_compiles")
check_tracer_leaks = _bool_state("jax_check_tracer_leaks")
checking_leaks = functools.partial(check_tracer_leaks, True)
threefry_partitionable = _bool_state("jax_threefry_partitionable")
debug_key_reuse = _bool_state("jax_debug_key_reuse")
enable_custom_prng = _bool_state("jax_enable_custom_prng")
allow_f16_reductions = _bool_state("jax_allow_f16_reductions")
explain_cache_misses = _bool_state("jax_explain_cache_misses")
no_execution = _bool_state("jax_no_execution")
no_tracing = _bool_state("jax_no_tracing")
thread_guard = _bool_state("jax_thread_guard")
softmax_custom_jvp = _bool_state("jax_softmax_custom_jvp")
auto_pcast = _bool_state("jax_auto_pcast")
jax2tf_associative_scan_reductions = _bool_state("jax2tf_associative_scan_reductions")
remove_size_one_mesh_axis_from_type = _bool_state("jax_remove_size_one_mesh_axis_from_type")
array_garbage_collection_guard = State("jax_array_garbage_collection_guard")
default_matmul_precision = State("jax_default_matmul_precision")
numpy_rank_promotion = State("jax_numpy_rank_promotion")
numpy_dtype_promotion = State("jax_numpy_dtype_promotion")
default_device = State("jax_default_device")
default_prng_impl = State("jax_default_prng_impl")
legacy_prng_key = State("jax_legacy_prng_key")
transfer_guard_host_to_device = State("jax_transfer_guard_host_to_device")
transfer_guard_device_to_host = State("jax_transfer_guard_device_to_host")
transfer_guard_device_to_device = State("jax_transfer_guard_device_to_device")


@contextlib.contextmanager
def transfer_guard(new_val: str) -> Iterator[None]:
    """Sets the transfer guard level of all three directions (numbax performs no guarded
    transfers: the level is validated and recorded, see docs/sharp_bits.md)."""
    with contextlib.ExitStack() as stack:
        for name in ("jax_transfer_guard", "jax_transfer_guard_host_to_device",
                     "jax_transfer_guard_device_to_host", "jax_transfer_guard_device_to_device"):
            stack.enter_context(config.override(name, new_val))
        yield


def disable_jit(disable: bool = True):
    """Context manager: run jitted functions eagerly, op by op (for debugging)."""
    return config.override("jax_disable_jit", disable)
