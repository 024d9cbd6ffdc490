"""numbax.jit: trace once per signature, simplify, fuse, generate Numba code, cache, dispatch."""
from __future__ import annotations

import contextlib
import functools
import gc
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from numbax._src import (
    core,
    eager_compile,
    jit_log,
    jit_options,
    jit_run,
    profiler,
    stages,
    trace_target,
)
from numbax._src import tree_util as tu
from numbax._src.array import Array, GpuArray, committed_device
from numbax._src.compiler import api as compiler
from numbax._src.compiler import cache as compile_cache
from numbax._src.compiler.backend import Executable
from numbax._src.config import config
from numbax._src.dtypes import canonicalize_dtype, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import partial_eval as pe
from numbax._src.jit_run import run_executable
from numbax._src.sharding import sharded_jit

_BACKENDS = (None, "cpu", "gpu", "cuda")


# ----------------------------------------------------------------------------- running


class _Entry:
    """One signature's compiled program, the pytree structure of its outputs, for programs
    holding a shard_map or a sharding constraint the layouts of the outputs, and until its
    first run the compile log that reports what that run compiled (jit_log)."""

    __slots__ = ("exe", "out_tree", "layouts", "log", "ran")

    def __init__(self, exe: Executable, out_tree, layouts=None, log=None) -> None:
        self.exe = exe
        self.out_tree = out_tree
        self.layouts = layouts
        self.log = log
        self.ran = False

    def run(self, leaves: Sequence[Any], donate: bool = False) -> list[Array]:
        if self.ran:
            return run_executable(self.exe, leaves, donate)
        log, self.log, self.ran = self.log, None, True
        with gc_paused():  # the kernels compile at this first call
            if log is None:
                return run_executable(self.exe, leaves, donate)
            return log.first_run(lambda: run_executable(self.exe, leaves, donate))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic GC off while numbax traces and Numba compiles: a compile allocates
    enough objects to set off full collections over everything numbax, Numba and scipy leave
    after import (~165,000 objects, 0.07-0.09 s of a 0.8 s first call); the garbage of a
    compile is collected by the next collection after it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# ----------------------------------------------------------------------------- arguments


def _is_tracing(leaves: Sequence[Any]) -> bool:
    if core._state.dynamic_trace is not None or core.trace_stack_depth() > 1:
        return True
    return any(isinstance(x, core.Tracer) for x in leaves)


# ----------------------------------------------------------------------------- the wrapper


class JitWrapped:
    """A jitted function: per-signature cache of executables, fast path for plain Array calls."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, backend, inline,
                 in_shardings=None, out_shardings=None, donate_argnames=()):
        if not callable(fun):
            raise NumbaxTypeError(
                f"jit: fun has type {type(fun).__name__}, expected a callable. Pass a function."
            )
        if backend not in _BACKENDS:
            raise NumbaxValueError(
                f"jit: backend has value {backend!r}, expected one of None, 'cpu', 'gpu', "
                "'cuda'. Pass one of those."
            )
        self.fun = fun
        self.static_argnums, self.static_argnames = jit_options.infer_statics(
            fun, jit_options.normalize_argnums("static_argnums", static_argnums),
            jit_options.normalize_argnames(static_argnames))
        self.donate_argnums, self.donate_argnames = jit_options.infer_statics(
            fun, jit_options.normalize_argnums("donate_argnums", donate_argnums),
            jit_options.normalize_argnames(donate_argnames, "donate_argnames"),
            "donate_argnums")
        jit_options.check_disjoint(self.static_argnames, self.donate_argnames)
        self.backend = "gpu" if backend == "cuda" else backend
        self.inline = inline
        # executables by signature and fast paths by plain-Array signature, least recently
        # used dropped past config.executable_cache_size; shared by every jit of `fun` with
        # the same options, as JAX's cache is
        shareable = in_shardings is None and out_shardings is None
        (self._cache, self._fast, self._fast_tree, self._gpu_fast,
         self._host_fast) = jit_options.shared_tables(
            fun, (self.static_argnums, self.static_argnames, self.donate_argnums,
                  self.donate_argnames, self.backend, bool(inline)) if shareable else None)
        self._in_shardings, self._out_shardings = in_shardings, out_shardings
        self._sharded_cache: dict = {}  # sharding/sharded_jit.py's entries
        self._simple = not self.static_argnums and not self.static_argnames and \
            in_shardings is None and out_shardings is None
        functools.update_wrapper(self, fun, updated=())  # never copy fun.__dict__ over ours
        _LIVE.add(self)

    @property
    def _name(self) -> str:
        return getattr(self.fun, "__name__", "<function>")

    def _split(self, args: tuple, kwargs: dict):
        statics = []
        if self.static_argnums:
            n = len(args)
            # a static position past the call's positional arguments is passed by name (its
            # name is in static_argnames, _infer_statics) or left to its default, as in JAX
            positions = {i % n for i in self.static_argnums if -n <= i < n}
            for i in sorted(positions):
                value = jit_options.hashable_static(self._name, f"argument {i}", args[i])
                statics.append((i, value))
            args = tuple(a for i, a in enumerate(args) if i not in positions)
        if self.static_argnames and kwargs:
            dyn = {}
            for k, v in kwargs.items():
                if k in self.static_argnames:
                    value = jit_options.hashable_static(self._name, f"argument {k!r}", v)
                    statics.append((k, value))
                else:
                    dyn[k] = v
            kwargs = dyn
        return args, kwargs, tuple(statics)

    def _bound(self, statics: tuple) -> Callable:
        if not statics:
            return self.fun
        pos = {k: v for k, v in statics if isinstance(k, int)}
        named = {k: v for k, v in statics if isinstance(k, str)}

        def bound(*dyn, **kwargs):
            it = iter(dyn)
            n = len(dyn) + len(pos)
            args = [pos[i] if i in pos else next(it) for i in range(n)]
            return self.fun(*args, **kwargs, **named)

        return bound

    def __call__(self, *args, **kwargs):
        ctx = config._fast_ctx  # None while jit is disabled, NaN checks run or an override is on
        if ctx is not None and not kwargs and self._simple and core._state.dynamic_trace is None:
            if not args or type(args[0]) is Array:  # (a numpy user's call goes on below)
                try:
                    key = (ctx, *[(a._value.shape, a._value.dtype, a._weak_type)
                                  for a in args if type(a) is Array])
                    fast = self._fast.get(key) if len(key) == len(args) + 1 else None
                except (AttributeError, TypeError):
                    fast = None
                if fast is not None:
                    return fast(args)
            if self._sharded_cache and args and type(args[0]) is sharded_jit.ShardedArray:
                out = sharded_jit.quick_call(self, ctx, args, run_executable)
                if out is not sharded_jit.MISS:
                    return out
            if self._host_fast:  # numpy arrays and scalars (Arrays mixed in)
                key = jit_run.host_key(args)
                fast = self._host_fast.get((ctx, *key)) if key is not None else None
                if fast is not None:
                    return fast(args)
            if self._fast_tree or self._gpu_fast or self._host_fast:  # pytrees: one flatten
                leaves, tree = tu.tree_flatten(args)
            if self._fast_tree:
                key = (ctx, tree, *[(a._value.shape, a._value.dtype, a._weak_type)
                                    for a in leaves if type(a) is Array])
                fast = self._fast_tree.get(key) if len(key) == len(leaves) + 2 else None
                if fast is not None:
                    return fast(leaves)
            if self._host_fast:  # pytrees of host values (a numpy user's parameters)
                key = jit_run.host_key(leaves)
                fast = self._host_fast.get((ctx, tree, *key)) if key is not None else None
                if fast is not None:
                    return fast(leaves)
            if self._gpu_fast:  # pytrees of GpuArrays (CUDA executables)
                entry = self._gpu_fast.get((ctx, tree, *_gpu_key(leaves)))
                if entry is not None:
                    return tu.tree_unflatten(entry.out_tree, run_executable(entry.exe, leaves))
        return self._call_slow(args, kwargs)

    def _call_slow(self, args, kwargs):
        if profiler.active():  # (a profiler trace runs: the call is one of its events)
            with profiler.TraceAnnotation(f"jit({self._name})"):
                return self._call_unrecorded(args, kwargs)
        return self._call_unrecorded(args, kwargs)

    def _call_unrecorded(self, args, kwargs):
        if config.jax_disable_jit:
            return self.fun(*args, **kwargs)
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        if self.inline or _is_tracing(leaves):
            return self.fun(*args, **kwargs)  # nested jit calls are inlined into the outer trace
        if not self._simple and (self._in_shardings is not None or
                                 self._out_shardings is not None) or \
                sharded_jit.is_sharded_call(leaves):
            return sharded_jit.call(self, args, kwargs, run_executable)
        entry = self._get_entry(leaves, in_tree, statics, dyn_args, dyn_kwargs)
        exe = entry.exe
        on_host = exe.device is None
        if profiler.active():
            with profiler.TraceAnnotation(f"jit({self._name}): run"):
                outs = entry.run(leaves, donate=True)
        else:
            outs = entry.run(leaves, donate=True)
        if entry.layouts is not None:  # a shard_map or constraint inside: results laid out
            return tu.tree_unflatten(entry.out_tree, sharded_jit.relabel(outs, *entry.layouts))
        if config.jax_debug_nans:
            _check_nans(self, outs, args, kwargs)
        ctx = config._fast_ctx
        if self._simple and not kwargs and ctx is not None:
            fast = jit_run.array_key(args)
            host = jit_run.host_key(args) if fast is None else None
            if on_host and fast is not None:
                self._fast[(ctx, *fast)] = jit_run.array_caller(entry)
            elif on_host and host is not None and entry.layouts is None and \
                    (caller := jit_run.host_caller(entry, host)) is not None:
                self._host_fast[(ctx, *host)] = caller
            elif on_host and entry.layouts is None and \
                    (host := jit_run.host_key(leaves)) is not None and \
                    (caller := jit_run.host_caller(entry, host)) is not None:
                # keyed by the structure of args alone (no kwargs here), as _fast_tree is
                self._host_fast[(ctx, tu.tree_structure(args), *host)] = caller
            elif on_host and all(type(a) is Array for a in leaves):
                tree = tu.tree_structure(args)  # the structure of args alone (no kwargs here)
                sigs = [(a._value.shape, a._value.dtype, a._weak_type) for a in leaves]
                self._fast_tree[(ctx, tree, *sigs)] = jit_run.array_caller(entry)
            elif not on_host and all(type(a) is GpuArray for a in leaves):
                self._gpu_fast[(ctx, tu.tree_structure(args), *_gpu_key(leaves))] = entry
        return tu.tree_unflatten(entry.out_tree, outs)

    def _get_entry(self, leaves, in_tree, statics, dyn_args, dyn_kwargs,
                   avals: list[core.ShapedArray] | None = None) -> _Entry:
        if avals is None:
            for i, x in enumerate(leaves):
                if not core.is_array_like(x):
                    raise NumbaxTypeError(
                        f"jit: argument leaf {i} of {self._name} is a {type(x).__name__}, which "
                        "is not a valid array type. Pass arrays or scalars, or mark it static "
                        "with static_argnums/static_argnames."
                    )
            avals = [core.get_aval(x) for x in leaves]
        device = _gpu_target(self.backend, leaves, self._name)
        key = (in_tree, tuple((a.shape, a.dtype, a.weak_type) for a in avals), statics,
               config.trace_context(), device)
        entry = self._cache.get(key)
        if entry is None:
            log = jit_log.start(self.fun, key, self._cache, avals, (dyn_args, dyn_kwargs, statics))
            # JAX drops donation while jax_debug_nans is on: its eager re-run needs the inputs
            donated = self._donated_leaves(dyn_args, dyn_kwargs, statics) \
                if self.donate_argnums and not config.jax_debug_nans else ()
            with gc_paused():
                entry = self._compile(in_tree, avals, statics, device, frozenset(donated), log)
            self._cache[key] = entry
        return entry

    def _donated_leaves(self, dyn_args: tuple, dyn_kwargs: dict, statics: tuple) -> list[int]:
        """The flat leaf positions of the arguments in donate_argnums (static ones skipped),
        then of those passed by a name in donate_argnames (leaves of the call's (args, kwargs)
        tree: a dict's entries in sorted key order)."""
        static_pos = {k for k, _ in statics if isinstance(k, int)}
        n = len(dyn_args) + len(static_pos)
        starts, count = [], 0
        for x in dyn_args:
            starts.append(count)
            count += len(tu.tree_leaves(x))
        starts.append(count)
        leaves = []
        for k in self.donate_argnums:
            if not -n <= k < n:
                continue  # JAX ignores donate_argnums past the arguments given
            k %= n
            if k in static_pos:
                continue
            p = k - sum(1 for s in static_pos if s < k)
            leaves.extend(range(starts[p], starts[p + 1]))
        for name in sorted(dyn_kwargs):
            n_leaves = len(tu.tree_leaves(dyn_kwargs[name]))
            if name in self.donate_argnames:
                leaves.extend(range(count, count + n_leaves))
            count += n_leaves
        return leaves

    def _compile(self, in_tree, avals, statics, device=None, donated: frozenset = frozenset(),
                 log: jit_log.CompileLog | None = None) -> _Entry:
        bound = self._bound(statics)
        store = {}

        def flat_fun(*leaves):
            a, kw = tu.tree_unflatten(in_tree, leaves)
            out = bound(*a, **kw)
            out_flat, store["tree"] = tu.tree_flatten(out)
            return out_flat

        backend = "cpu" if device is None else "gpu"
        with trace_target.tracing_for(backend):
            jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals)
        if log is not None:
            log.traced()
        if donated:
            jit_options.warn_unusable_donations([avals[i] for i in sorted(donated)],
                                                [v.aval for v in jaxpr.outvars])
        exe = compiler.compile(core.ClosedJaxpr(jaxpr, consts), backend, donated, self._name,
                               device)
        if log is not None:
            log.lowered()
        layouts = sharded_jit.plain_layouts(jaxpr) if sharded_jit.needs_layouts(jaxpr) else None
        return _Entry(exe, store["tree"], layouts, log)

    def _clear(self) -> None:
        for table in (self._cache, self._fast, self._fast_tree, self._gpu_fast, self._host_fast):
            table.clear()
        self._sharded_cache.clear()

    def clear_cache(self) -> None:
        """Drops this function's traced and compiled programs (JAX's `jit(f).clear_cache`):
        the next call traces and compiles again.

        >>> import numbax
        >>> f = numbax.jit(lambda x: x + 1)
        >>> f.clear_cache()
        """
        self._clear()

    def trace(self, *args, **kwargs) -> stages.Traced:
        """Traces at the arguments' types without compiling (JAX's `jit(f).trace`): arrays,
        scalars or ShapeDtypeStructs, static arguments by value.

        >>> import numbax
        >>> print(numbax.jit(lambda x: x * 2).trace(1.0).jaxpr)
        { lambda ; a:f64[]. let b:f64[] = mul a 2.0:f64[] in (b,) }
        """
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        avals = [_lower_aval(x, i, self._name) for i, x in enumerate(leaves)]
        bound, store = self._bound(statics), {}

        def flat_fun(*flat):
            a, kw = tu.tree_unflatten(in_tree, flat)
            out_flat, store["tree"] = tu.tree_flatten(bound(*a, **kw))
            return out_flat

        jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals)
        donated = self._donated_leaves(dyn_args, dyn_kwargs, statics)
        return stages.Traced(core.ClosedJaxpr(jaxpr, consts), self._name,
                             stages.make_args_info(in_tree, avals, donated), in_tree,
                             store["tree"], lambda: self.lower(*args, **kwargs))

    def lower(self, *args, **kwargs) -> stages.Lowered:
        """Traces and compiles for the arguments' types (JAX's `jit(f).lower`): arrays,
        scalars or ShapeDtypeStructs, static arguments by value; `.compile()` gives the
        callable `Compiled`.

        >>> import numbax
        >>> numbax.jit(lambda x: x * 2).lower(1.0).compile()(3.0)
        Array(6., dtype=float64, weak_type=True)
        """
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        avals = [_lower_aval(x, i, self._name) for i, x in enumerate(leaves)]
        entry = self._get_entry(leaves, in_tree, statics, dyn_args, dyn_kwargs, avals)
        donated = self._donated_leaves(dyn_args, dyn_kwargs, statics)
        return stages.Lowered(entry, self._name, stages.make_args_info(in_tree, avals, donated),
                              in_tree, functools.partial(self._run_compiled, entry))

    def _run_compiled(self, entry: _Entry, leaves: list) -> list[Array]:
        """Runs `Compiled` (jax.stages) on argument leaves of its tree: refuses tracers,
        other types and other committed devices than it was compiled for."""
        name = self._name
        if _is_tracing(leaves):
            raise NumbaxTypeError(
                f"jit({name}): a function lowered and compiled for a particular signature "
                "cannot be transformed (jit, grad, vmap...). Transform the function before "
                "lowering it, or call the jitted function instead of the compiled one."
            )
        exe = entry.exe
        mismatches = [f"argument leaf {i} compiled with {w.str_short()} and called with "
                      f"{a.str_short()}" for i, (a, w) in
                      enumerate(zip(map(core.get_aval, leaves), exe.in_avals))
                      if (a.shape, a.dtype) != (w.shape, w.dtype)]
        if mismatches:
            raise NumbaxTypeError(
                f"jit({name}): argument types differ from the types for which this computation "
                f"was compiled: {'; '.join(mismatches)}. Call lower() again for new shapes."
            )
        if exe.device is not None and committed_device(
                leaves, f"jit({name})") not in (None, exe.device):
            raise NumbaxValueError(
                f"jit({name}): compiled for {exe.device}, called with arguments committed to "
                "another device. Call lower() again with them."
            )
        return entry.run(leaves)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<numbax.jit of {self._name}>"


def _lower_aval(x: Any, i: int, fun_name: str) -> core.ShapedArray:
    """The aval `lower` specializes to: an array's, or that of anything with .shape and
    .dtype (a ShapeDtypeStruct), as JAX's lower accepts in place of an array."""
    if core.is_array_like(x):
        return core.get_aval(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return core.ShapedArray(tuple(x.shape), canonicalize_dtype(np.dtype(x.dtype)),
                                bool(getattr(x, "weak_type", False)))
    raise NumbaxTypeError(
        f"jit({fun_name}).lower: argument leaf {i} is a {type(x).__name__}, expected an array, "
        "a scalar or an object with .shape and .dtype (jax.ShapeDtypeStruct). Pass one of "
        "those, or mark it static with static_argnums/static_argnames."
    )


_LIVE: weakref.WeakSet = weakref.WeakSet()  # every jitted function, for clear_caches


def clear_caches() -> None:
    """Clears what jit keeps in memory: every jitted function's traced and compiled programs,
    and the generated kernel modules (JAX's jax.clear_caches). The next call traces and
    compiles again; the disk cache stays, so kernels load from it instead of compiling.

    >>> import numbax
    >>> numbax.clear_caches()
    """
    for fun in list(_LIVE):
        fun._clear()
    jit_options.clear_shared_tables()
    compiler.forget_built()
    compile_cache.clear()


def _gpu_key(args: tuple) -> tuple:
    return tuple((a._shape, a._dtype, a._weak_type, a._device) if type(a) is GpuArray
                 else None for a in args)


def _gpu_target(backend: str | None, leaves: Sequence[Any], fun_name: str):
    """The GPU device to run on, else None (the CPU): the GPU the arguments are committed to,
    else GPU 0 for backend="gpu".

    Arguments committed to two different devices are an error (JAX's rule), checked whenever a
    GPU is involved; CPU-only calls keep their zero-cost path."""
    if backend == "cpu":
        return None
    if backend is None and not any(type(x) is GpuArray for x in leaves):
        return None
    committed = committed_device(leaves, f"jit({fun_name})", "argument leaf")
    if committed is not None and committed.platform == "gpu":
        return committed
    from numbax._src import devices

    return devices.gpu_devices()[0]  # backend="gpu": committed CPU arguments move too


def _check_nans(wrapped: JitWrapped, outs: list[Array], args, kwargs) -> None:
    for o in outs:
        v = o._value
        if kind_of(v.dtype) in "fc" and np.isnan(v).any():
            with config.override("jax_disable_jit", True):
                wrapped.fun(*args, **kwargs)  # names the primitive (core.EvalTrace raises)
            raise FloatingPointError(
                f"jax_debug_nans: invalid value (nan) in the output of jit({wrapped._name}), "
                "but not when run eagerly. Turn jax_debug_nans off once the source is found."
            )


def jit(fun: Callable | None = None, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        donate_argnums: int | Sequence[int] = (), donate_argnames: str | Sequence[str] = (),
        backend: str | None = None, inline: bool = False) -> Any:
    """Compiles `fun` with Numba: traced once per argument signature, then fused and cached.

    Args:
      fun: a function of arrays (pytrees of arrays and scalars) returning arrays.
      static_argnums, static_argnames: arguments that are Python values (hashable); a new
        value retraces.
      donate_argnums: positional arguments whose buffers the results may reuse. An output of
        the same shape and dtype is written into a donated Array's buffer when the compiled
        code no longer reads it afterwards, and that Array is then deleted (any use raises
        RuntimeError). Only buffers numbax allocated (Arrays it made) that nothing else
        references are reused; numpy arguments are never written into. A donated argument
        no output matches in shape and dtype warns "Some donated buffers were not usable",
        as in JAX; jax_debug_nans on at compile time turns donation off.
      donate_argnames: the same, for arguments passed by name (donate_argnums and
        donate_argnames complete each other through `fun`'s signature, as in JAX).
      backend: None, "cpu", or "gpu" (alias "cuda": @cuda.jit kernels through numba-cuda).
        None runs on the GPU an argument is committed to (numbax.device_put), else on the
        CPU; "gpu" runs on that GPU, or GPU 0 when no argument is on one. Arguments
        committed to two different devices raise ValueError (JAX's rule); uncommitted ones
        (numpy arrays, scalars, Arrays never placed) move to the committed device.
      inline: when True, calls are always traced into the caller (no compiled code).
      in_shardings, out_shardings: Shardings (or PartitionSpecs over the mesh set_mesh
        installed; None: the argument's own), a prefix tree of the positional arguments /
        the results. Arguments are laid out as asked; results come back with the requested
        sharding. See docs/sharp_bits.md for which programs run block by block in the
        workers (the rest run in one process).

    Returns:
      A function with the same signature returning numbax Arrays, with `.lower(*args)`.

    Unlike JAX: a donated Array whose buffer numbax could not reuse (one an output matches
    but the compiled code still reads, or one an output of a library kernel would take)
    stays valid, without a warning.
    A jit called inside another transform (grad, vmap, make_jaxpr, jit) is inlined
    into that transform's trace rather than staged as a call primitive.

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.jit(lambda x: x * 2.0 + 1.0)(jnp.arange(3.0))
    Array([1., 3., 5.], dtype=float64)
    """
    if fun is None:
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 backend=backend, inline=inline)
    return JitWrapped(fun, static_argnums, static_argnames, donate_argnums, backend, inline,
                      in_shardings, out_shardings, donate_argnames)



eager_compile.install_jit(jit)  # large eager library calls run through jit
