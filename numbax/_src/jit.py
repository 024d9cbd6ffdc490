"""numbax.jit: trace once per signature, simplify, fuse, generate Numba code, cache, dispatch."""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.array import Array, GpuArray, _DeletedArray, committed_device
from numbax._src.compiler import cache, fusion, inline, passes
from numbax._src.compiler.cpu import control_flow as codegen_nopython
from numbax._src.compiler.cpu import driver as driver_cpu
from numbax._src.compiler.cpu import loops as codegen_cpu
from numbax._src.compiler.cpu.runtime import library as lowering
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import partial_eval as pe

_BACKENDS = (None, "cpu", "gpu", "cuda")


# ----------------------------------------------------------------------------- compilation


class Executable:
    """A compiled jaxpr: the driver function, its consts, and the generated sources."""

    __slots__ = ("driver", "consts", "out_weak", "sources", "jaxpr", "out_tree", "fun_name",
                 "donate", "out_fresh")

    def __init__(self, driver, consts, out_weak, sources, jaxpr, out_tree, fun_name,
                 donate=(), out_fresh=()) -> None:
        self.driver = driver
        self.consts = consts
        self.out_weak = out_weak
        self.sources = sources
        self.jaxpr = jaxpr
        self.out_tree = out_tree
        self.fun_name = fun_name
        self.donate = donate  # per trailing driver parameter: the leaf whose buffer it takes
        self.out_fresh = out_fresh or (False,) * len(out_weak)  # outputs the driver allocated

    def call_flat(self, args_np: Sequence[np.ndarray], bufs: Sequence = ()) -> list[Array]:
        """Runs the driver; `bufs` are donated buffers (or None) for its trailing parameters.

        Outputs the driver allocated are wrapped as they are (read-only, no view), so a later
        call can take them as donations; others (views of inputs...) through a read-only view."""
        outs = self.driver(*self.consts, *args_np, *bufs)
        return [_wrap_owned(o, w) if fresh else Array._from_numpy(o, w)
                for o, w, fresh in zip(outs, self.out_weak, self.out_fresh, strict=True)]


def _wrap_owned(o: np.ndarray, weak_type: bool) -> Array:
    o.setflags(write=False)
    a = object.__new__(Array)
    a._value, a._weak_type, a._device = o, weak_type, None
    return a


def _local_refcount() -> int:
    v = np.empty(0)
    return sys.getrefcount(v)


_SOLE = _local_refcount()  # a buffer's refcount when a function's local is its one reference


def _donations(leaves: Sequence[Any], donate: tuple[int, ...], held: int):
    """The buffers jit may write into, one per donated leaf (None where it may not), and the
    Arrays they come from. A buffer qualifies when it is a numbax Array's own allocation that
    nothing else references (no other Array, view or numpy handle: its refcount is the Array's
    plus `held`, the caller's list); it is made writeable here."""
    bufs, donors = [], []
    for i in donate:
        a = leaves[i]
        v = a._value if type(a) is Array else None
        if v is not None and v.base is None and v.flags.owndata and v.flags.c_contiguous and \
                sys.getrefcount(v) == _SOLE + 1 + held and sum(x is a for x in leaves) == 1:
            v.setflags(write=True)
            bufs.append(v)
            donors.append(a)
        else:
            bufs.append(None)
    return bufs, donors


def _delete(donors: list[Array]) -> None:
    """Marks donated Arrays deleted: their class becomes one whose every use raises."""
    for a in donors:
        a._value = None
        a.__class__ = _DeletedArray


def _fusible(eqn: core.JaxprEqn) -> bool:
    name = eqn.primitive.name
    in_class = name in fusion.ELEMENTWISE or name in fusion.BROADCAST or \
        name in fusion.REDUCTIONS or name in fusion.SOURCES
    return in_class and codegen_cpu.scalar_supported(eqn)


def compile_jaxpr(closed: core.ClosedJaxpr, out_tree, fun_name: str,
                  donated: frozenset = frozenset()) -> Executable:
    """Simplify, fuse, render each kernel alone, load (cached), render and load the driver.

    `donated` holds the positions of input leaves whose buffers outputs may be written into."""
    out_weak = [v.aval.weak_type for v in closed.jaxpr.outvars]
    jaxpr = passes.simplify(core.check_jaxpr(inline.inline_calls(closed.jaxpr)))
    nodes = fusion.partition(jaxpr, _fusible)
    sources, module_names, fallbacks = [], [], []
    parallel = False
    for j, node in enumerate(nodes):
        if isinstance(node, fusion.LibraryCall) and \
                node.eqn.primitive.name in codegen_nopython.CONTROL_FLOW:
            nodes[j] = node = _control_flow_node(node, sources, fallbacks, fun_name)
        if isinstance(node, fusion.LoopNest):
            src, par = codegen_cpu.render_loop(node)
            parallel = parallel or par
            module = cache.load_module(src, codegen_cpu.CODEGEN_CONFIG)
            sources.append(src)
            module_names.append(module.__name__)
        else:
            module_names.append(None)
    plan = driver_cpu.donation_plan(jaxpr, nodes, donated)
    driver_src = driver_cpu.render_driver(jaxpr, nodes, module_names, plan)
    driver_mod = cache.load_module(driver_src, codegen_cpu.CODEGEN_CONFIG)
    sources.append(driver_src)
    consts = [np.asarray(core.to_numpy(c), order="C") for c in closed.consts]
    driver = lowering.with_numba_threads(driver_mod.driver) if parallel else driver_mod.driver
    nested = {v for n in nodes if isinstance(n, fusion.LoopNest) for v in n.outputs}
    fresh = tuple(isinstance(v, core.Var) and v in nested and jaxpr.outvars.count(v) == 1
                  for v in jaxpr.outvars)
    return Executable(driver, [*fallbacks, *consts], out_weak, sources, jaxpr, out_tree,
                      fun_name, tuple(i for _, i in plan), fresh)


def _control_flow_node(node, sources: list, fallbacks: list, fun_name: str):
    """One @njit kernel for a cond/while/scan, or a Python loop over compiled sub-jaxprs."""
    cf = codegen_nopython.NopythonCall(node.eqn, node.inputs, node.outputs)
    try:
        src = codegen_nopython.render(node.eqn)
    except codegen_nopython.Unsupported:
        def compile_closed(sub: core.ClosedJaxpr):
            exe = compile_jaxpr(sub, None, fun_name)
            return lambda *args: exe.driver(*exe.consts, *args)

        cf.fallback = codegen_nopython.python_lowering(node.eqn, compile_closed)
        cf.fallback_name = f"f{len(fallbacks)}"
        fallbacks.append(cf.fallback)
        return cf
    cf.module = cache.load_module(src, codegen_cpu.CODEGEN_CONFIG).__name__
    sources.append(src)
    return cf


# ----------------------------------------------------------------------------- arguments


def _is_tracing(leaves: Sequence[Any]) -> bool:
    if core._state.dynamic_trace is not None or core.trace_stack_depth() > 1:
        return True
    return any(isinstance(x, core.Tracer) for x in leaves)


def _leaf_value(x: Any, aval: core.ShapedArray) -> np.ndarray:
    if type(x) is Array:
        return x._value
    value = np.asarray(x, dtype=aval.dtype)
    return value if value.flags.c_contiguous else np.ascontiguousarray(value)


def _normalize_argnums(name: str, value: Any) -> tuple[int, ...]:
    value = (value,) if isinstance(value, int) else tuple(value)
    for v in value:
        if not isinstance(v, int):
            raise NumbaxTypeError(
                f"jit: {name} has an entry of type {type(v).__name__}, expected int. Pass an "
                "int or a tuple of ints."
            )
    return value


def _normalize_argnames(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


class Lowered:
    """What `jit(f).lower(*args)` returns: the jaxpr, the generated source, and `compile()`."""

    def __init__(self, wrapped: JitWrapped, executable: Executable, in_tree, statics) -> None:
        self._wrapped = wrapped
        self._executable = executable
        self.jaxpr = executable.jaxpr
        self.in_tree = in_tree
        self._statics = statics

    def as_text(self) -> str:
        return "\n\n".join(self._executable.sources)

    def compile(self) -> Compiled:
        return Compiled(self._wrapped, self._executable, self.in_tree, self._statics)


class Compiled:
    """A compiled function for one signature; call it with the arguments `lower` saw."""

    def __init__(self, wrapped, executable, in_tree, statics) -> None:
        self._wrapped = wrapped
        self._executable = executable
        self.in_tree = in_tree
        self._statics = statics

    def as_text(self) -> str:
        return "\n\n".join(self._executable.sources)

    def __call__(self, *args, **kwargs):
        dyn_args, dyn_kwargs, statics = self._wrapped._split(args, kwargs)
        leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        if in_tree != self.in_tree or statics != self._statics:
            raise NumbaxTypeError(
                f"jit: compiled function called with arguments of structure {in_tree}, "
                f"expected {self.in_tree}. Call lower() again for new arguments."
            )
        avals = [core.get_aval(x) for x in leaves]
        want = self._executable.jaxpr.in_avals
        if [(a.shape, a.dtype) for a in avals] != [(a.shape, a.dtype) for a in want]:
            shapes = [a.str_short() for a in avals]
            raise NumbaxTypeError(
                f"jit: compiled function got arguments {shapes}, expected "
                f"{[a.str_short() for a in want]}. Call lower() again for new shapes."
            )
        exe = self._executable
        if isinstance(exe, Executable):
            outs = exe.call_flat([_leaf_value(x, a) for x, a in zip(leaves, avals)])
        else:  # GPU: the device the executable was compiled for
            if committed_device(leaves, f"jit({self._wrapped._name})") not in (None,
                                                                              exe.device):
                raise NumbaxValueError(
                    f"jit({self._wrapped._name}): compiled for {exe.device}, called with "
                    "arguments committed to another device. Call lower() again with them."
                )
            with cuda_runtime.on_device(exe.device.id):
                outs = exe.call_flat(leaves)
        return tu.tree_unflatten(exe.out_tree, outs)


# ----------------------------------------------------------------------------- the wrapper


class JitWrapped:
    """A jitted function: per-signature cache of executables, fast path for plain Array calls."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, backend, inline):
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
        self.static_argnums = _normalize_argnums("static_argnums", static_argnums)
        self.static_argnames = _normalize_argnames(static_argnames)
        self.donate_argnums = _normalize_argnums("donate_argnums", donate_argnums)
        self.backend = "gpu" if backend == "cuda" else backend
        self.inline = inline
        self._cache: dict[Any, Executable] = {}
        self._fast: dict[Any, Executable] = {}
        self._fast_tree: dict[Any, Callable] = {}
        self._gpu_fast: dict[Any, Any] = {}
        self._simple = not self.static_argnums and not self.static_argnames
        functools.update_wrapper(self, fun, updated=())  # never copy fun.__dict__ over ours

    @property
    def _name(self) -> str:
        return getattr(self.fun, "__name__", "<function>")

    def _split(self, args: tuple, kwargs: dict):
        statics = []
        if self.static_argnums:
            n = len(args)
            positions = set()
            for i in self.static_argnums:
                if not -n <= i < n:
                    raise NumbaxValueError(
                        f"jit: static_argnums {self.static_argnums} refers to argument {i}, but "
                        f"{self._name} was called with {n} positional arguments."
                    )
                positions.add(i % n)
            for i in sorted(positions):
                statics.append((i, _hashable(self._name, f"argument {i}", args[i])))
            args = tuple(a for i, a in enumerate(args) if i not in positions)
        if self.static_argnames and kwargs:
            dyn = {}
            for k, v in kwargs.items():
                if k in self.static_argnames:
                    statics.append((k, _hashable(self._name, f"argument {k!r}", v)))
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
            try:
                key = (ctx, *[(a._value.shape, a._value.dtype, a._weak_type) for a in args
                              if type(a) is Array])
                fast = self._fast.get(key) if len(key) == len(args) + 1 else None
            except (AttributeError, TypeError):
                fast = None
            if fast is not None:
                return fast(args)
            if self._fast_tree:  # pytrees of Arrays (params lists...): one flatten, no avals
                leaves, tree = tu.tree_flatten(args)
                key = (ctx, tree, *[(a._value.shape, a._value.dtype, a._weak_type)
                                    for a in leaves if type(a) is Array])
                fast = self._fast_tree.get(key) if len(key) == len(leaves) + 2 else None
                if fast is not None:
                    return fast(leaves)
            if self._gpu_fast:  # all-GpuArray calls (codegen_cuda executables)
                exe = self._gpu_fast.get((ctx, *_gpu_key(args)))
                if exe is not None:
                    with cuda_runtime.on_device(exe.device.id):
                        outs = exe.call_flat(args)
                    return tu.tree_unflatten(exe.out_tree, outs)
        return self._call_slow(args, kwargs)

    def _call_slow(self, args, kwargs):
        if config.jax_disable_jit:
            return self.fun(*args, **kwargs)
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        if self.inline or _is_tracing(leaves):
            return self.fun(*args, **kwargs)  # nested jit calls are inlined into the outer trace
        exe, avals = self._get_executable(leaves, in_tree, statics, dyn_args, dyn_kwargs)
        if isinstance(exe, Executable):
            values = [_leaf_value(x, a) for x, a in zip(leaves, avals)]
            bufs, donors = _donations(leaves, exe.donate, 1) if exe.donate else ((), ())
            _delete(donors)
            outs = exe.call_flat(values, bufs)
        else:  # GPU: device buffers pass through, host leaves are copied over
            with cuda_runtime.on_device(exe.device.id):
                outs = exe.call_flat(leaves)
        if config.jax_debug_nans:
            _check_nans(self, outs, args, kwargs)
        fast = _fast_key(args) if self._simple and not kwargs else None
        if fast is not None and config._fast_ctx is not None and isinstance(exe, Executable):
            self._fast[(config._fast_ctx, *fast)] = _fast_caller(exe)
        elif self._simple and not kwargs and config._fast_ctx is not None and \
                isinstance(exe, Executable) and all(type(a) is Array for a in leaves):
            tree = tu.tree_structure(args)  # the structure of args alone (no kwargs here)
            sigs = [(a._value.shape, a._value.dtype, a._weak_type) for a in leaves]
            self._fast_tree[(config._fast_ctx, tree, *sigs)] = _fast_caller(exe)
        if not isinstance(exe, Executable) and self._simple and not kwargs and \
                config._fast_ctx is not None and all(type(a) is GpuArray for a in args):
            self._gpu_fast[(config._fast_ctx, *_gpu_key(args))] = exe
        return tu.tree_unflatten(exe.out_tree, outs)

    def _get_executable(self, leaves, in_tree, statics, dyn_args, dyn_kwargs):
        for i, x in enumerate(leaves):
            if not core.is_array_like(x):
                raise NumbaxTypeError(
                    f"jit: argument leaf {i} of {self._name} is a {type(x).__name__}, which is "
                    "not a valid array type. Pass arrays or scalars, or mark it static with "
                    "static_argnums/static_argnames."
                )
        avals = [core.get_aval(x) for x in leaves]
        device = _gpu_target(self.backend, leaves, self._name)
        key = (in_tree, tuple((a.shape, a.dtype, a.weak_type) for a in avals), statics,
               config.trace_context(), device)
        exe = self._cache.get(key)
        if exe is None:
            donated = self._donated_leaves(dyn_args, statics) if self.donate_argnums else ()
            exe = self._compile(in_tree, avals, statics, device, frozenset(donated))
            self._cache[key] = exe
        return exe, avals

    def _donated_leaves(self, dyn_args: tuple, statics: tuple) -> list[int]:
        """The flat leaf positions of the arguments in donate_argnums (static ones skipped)."""
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
        return leaves

    def _compile(self, in_tree, avals, statics, device=None,
                 donated: frozenset = frozenset()) -> Executable:
        bound = self._bound(statics)
        store = {}

        def flat_fun(*leaves):
            a, kw = tu.tree_unflatten(in_tree, leaves)
            out = bound(*a, **kw)
            out_flat, store["tree"] = tu.tree_flatten(out)
            return out_flat

        jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals)
        if device is not None:
            from numbax._src.compiler.cuda import driver as cuda_driver

            with cuda_runtime.on_device(device.id):  # consts go to that GPU
                return cuda_driver.compile_jaxpr(core.ClosedJaxpr(jaxpr, consts),
                                                 store["tree"], self._name, device)
        return compile_jaxpr(core.ClosedJaxpr(jaxpr, consts), store["tree"], self._name,
                             donated)

    def lower(self, *args, **kwargs) -> Lowered:
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        exe, _ = self._get_executable(leaves, in_tree, statics, dyn_args, dyn_kwargs)
        return Lowered(self, exe, in_tree, statics)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<numbax.jit of {self._name}>"


def _gpu_key(args: tuple) -> tuple:
    return tuple((a._shape, a._dbuf.dtype, a._weak_type, a._device) if type(a) is GpuArray
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


def _fast_key(args: tuple) -> tuple | None:
    """The signature of a call with only Array positional args, or None (use the slow path)."""
    key = []
    for a in args:
        if type(a) is not Array:
            return None
        v = a._value
        key.append((v.shape, v.dtype, a._weak_type))
    return tuple(key)


def _fast_caller(exe: Executable) -> Callable:
    """The whole call for one signature of plain Array arguments: run the driver, wrap the
    fresh output buffers as Arrays (made read-only in place, no view) and rebuild the tree."""
    driver, consts, weak, tree = exe.driver, tuple(exe.consts), tuple(exe.out_weak), exe.out_tree
    new = object.__new__

    def wrap(o, w):
        o.setflags(write=False)  # a fresh buffer or a view: never an input's own flags
        a = new(Array)
        a._value, a._weak_type, a._device = o, w, None
        return a

    if exe.donate:  # donated leaves: buffers taken before the values are read, then deleted
        donate = exe.donate

        def call(args):
            bufs, donors = _donations(args, donate, 0)
            values = [a._value for a in args]
            _delete(donors)
            outs = driver(*consts, *values, *bufs)
            return tu.tree_unflatten(tree, [wrap(o, w) for o, w in zip(outs, weak)])
    elif tree.node_type is None:  # one array out
        (w0,) = weak

        def call(args):
            (o,) = driver(*consts, *[a._value for a in args])
            return wrap(o, w0)
    elif tree.node_type is tuple and all(c.node_type is None for c in tree.children):
        def call(args):
            outs = driver(*consts, *[a._value for a in args])
            return tuple([wrap(o, w) for o, w in zip(outs, weak)])
    else:
        def call(args):
            outs = driver(*consts, *[a._value for a in args])
            return tu.tree_unflatten(tree, [wrap(o, w) for o, w in zip(outs, weak)])
    return call


def _hashable(fun_name: str, what: str, value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise NumbaxTypeError(
            f"jit: static {what} of {fun_name} has type {type(value).__name__}, which is not "
            "hashable; static arguments must be hashable. Use a tuple instead of a list, or "
            "pass arrays as non-static arguments."
        ) from None
    return value


def _check_nans(wrapped: JitWrapped, outs: list[Array], args, kwargs) -> None:
    for o in outs:
        v = o._value
        if v.dtype.kind in "fc" and np.isnan(v).any():
            with config.override("jax_disable_jit", True):
                wrapped.fun(*args, **kwargs)  # names the primitive (core.EvalTrace raises)
            raise FloatingPointError(
                f"jax_debug_nans: invalid value (nan) in the output of jit({wrapped._name}), "
                "but not when run eagerly. Turn jax_debug_nans off once the source is found."
            )


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
        backend: str | None = None, inline: bool = False) -> Any:
    """Compiles `fun` with Numba: traced once per argument signature, then fused and cached.

    Args:
      fun: a function of arrays (pytrees of arrays and scalars) returning arrays.
      static_argnums, static_argnames: arguments that are Python values (hashable); a new
        value retraces.
      donate_argnums: positional arguments whose buffers the results may reuse. An output of
        the same shape and dtype is written into a donated Array's buffer when the compiled
        code no longer reads it afterwards, and that Array is then deleted (any use raises
        RuntimeError). Only buffers numbax allocated (outputs of an earlier jit call) that
        nothing else references are reused; numpy arguments are never written into.
      backend: None, "cpu", or "gpu" (alias "cuda": @cuda.jit kernels through numba-cuda).
        None runs on the GPU an argument is committed to (numbax.device_put), else on the
        CPU; "gpu" runs on that GPU, or GPU 0 when no argument is on one. Arguments
        committed to two different devices raise ValueError (JAX's rule); uncommitted ones
        (numpy arrays, scalars, Arrays never placed) move to the committed device.
      inline: when True, calls are always traced into the caller (no compiled code).

    Returns:
      A function with the same signature returning numbax Arrays, with `.lower(*args)`.

    Unlike JAX: a donated Array whose buffer could not be reused stays valid (no warning).
    A jit called inside another transform (grad, vmap, make_jaxpr, jit) is inlined
    into that transform's trace rather than staged as a call primitive.

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.jit(lambda x: x * 2.0 + 1.0)(jnp.arange(3.0))
    Array([1., 3., 5.], dtype=float64)
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 backend=backend, inline=inline)
    return JitWrapped(fun, static_argnums, static_argnames, donate_argnums, backend, inline)

