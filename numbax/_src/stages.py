"""jax.stages: the ahead-of-time stages of a jitted function (Traced, Lowered, Compiled), the
argument descriptions they carry (ArgInfo) and the protocol jit's result meets (Wrapped).

jit.py makes these objects and runs them; this module holds only what they report, so that
the AOT surface is one place and jit's wrapper stays about dispatch."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Union, runtime_checkable

from numbax._src import core, devices, stages_cost
from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.sharding.shardings import SingleDeviceSharding

CompilerOptions = dict[str, Union[str, bool]]  # noqa: UP007  (JAX's alias, as it spells it)


@dataclass(frozen=True, slots=True)
class ArgInfo:
    """One argument leaf of a traced, lowered or compiled function: its type and whether it
    was donated (`jit(..., donate_argnums=...)`)."""

    _aval: core.ShapedArray
    donated: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self._aval.shape

    @property
    def dtype(self) -> Any:
        return self._aval.dtype


def make_args_info(in_tree: Any, avals: Sequence[core.ShapedArray],
                   donated: Sequence[int]) -> Any:
    """The pytree (of `in_tree`, the call's (args, kwargs)) of ArgInfo for the leaves' avals,
    `donated` naming the donated leaf positions."""
    donated = frozenset(donated)
    return tu.tree_unflatten(in_tree, [ArgInfo(a, i in donated) for i, a in enumerate(avals)])


def _shape_dtype_struct(aval: core.ShapedArray, weak_type: bool) -> Any:
    from numbax._src.api import ShapeDtypeStruct  # api sits above jit and this module

    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=weak_type and aval.weak_type)


class Stage:
    """What every stage reports about its arguments: `args_info` and what derives from it."""

    args_info: Any
    _in_tree: Any

    @property
    def in_tree(self) -> Any:
        """Tree structure of the pair (positional arguments, keyword arguments)."""
        return self._in_tree

    @property
    def in_avals(self) -> Any:
        """The arguments' avals, as a pytree like the arguments."""
        return tu.tree_map(lambda info: info._aval, self.args_info)

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """Flat positions of the donated argument leaves."""
        return tuple(i for i, info in enumerate(tu.tree_leaves(self.args_info)) if info.donated)


class Traced(Stage):
    """What `jit(f).trace(*args)` returns: `f` traced to a jaxpr for the arguments' types, not
    yet compiled. `.jaxpr`, `.out_info`, `lower()`; calling it evaluates the jaxpr."""

    def __init__(self, jaxpr: core.ClosedJaxpr, fun_name: str, args_info: Any, in_tree: Any,
                 out_tree: Any, lower: Callable[[], Lowered]) -> None:
        self.jaxpr = jaxpr
        self.fun_name = fun_name
        self.args_info = args_info
        self._in_tree = in_tree
        self.out_tree = out_tree
        self._lower = lower

    @property
    def out_avals(self) -> Any:
        return tu.tree_unflatten(self.out_tree, self.jaxpr.out_avals)

    @property
    def out_info(self) -> Any:
        """The outputs as a pytree of ShapeDtypeStructs (weak types kept, as in JAX)."""
        return tu.tree_unflatten(self.out_tree, [_shape_dtype_struct(a, True)
                                                 for a in self.jaxpr.out_avals])

    def __call__(self, *args, **kwargs) -> Any:
        leaves = _check_tree(self.fun_name, self._in_tree, args, kwargs)
        outs = core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *leaves)
        return tu.tree_unflatten(self.out_tree, outs)

    def lower(self, *, lowering_platforms: tuple[str, ...] | None = None) -> Lowered:
        """Compiles the traced function (numbax generates its Numba code here)."""
        if lowering_platforms is not None and tuple(lowering_platforms) != ("cpu",):
            raise NumbaxValueError(
                f"jit({self.fun_name}).trace(...).lower: lowering_platforms is "
                f"{lowering_platforms!r}, expected None or ('cpu',). Lower for a GPU with "
                "jit(f, backend='gpu') instead.")
        return self._lower()


class _Program(Stage):
    """A stage over jit's cache entry for one signature (Lowered, Compiled): `run` calls it
    on argument leaves (JitWrapped._run_compiled)."""

    def __init__(self, entry: Any, fun_name: str, args_info: Any, in_tree: Any,
                 run: Callable[[list], list]) -> None:
        self._entry = entry
        self._fun_name = fun_name
        self.args_info = args_info
        self._in_tree = in_tree
        self.out_tree = entry.out_tree
        self._run = run


class Lowered(_Program):
    """What `jit(f).lower(*args)` returns: the program for the arguments' types, its generated
    source (`as_text()`), and `compile()`. numbax compiles while lowering, so `compile()`
    only wraps the executable."""

    @property
    def jaxpr(self) -> core.Jaxpr:
        """The simplified jaxpr the generated code implements (numbax's; not in JAX)."""
        return self._entry.exe.jaxpr

    @property
    def out_info(self) -> Any:
        """The outputs as a pytree of ShapeDtypeStructs (without weak types, as in JAX)."""
        return _out_info(self._entry)

    def compile(self, compiler_options: CompilerOptions | None = None, *,
                device_assignment: Any = None) -> Compiled:
        if compiler_options:
            raise NumbaxValueError(
                f"jit({self._fun_name}).lower(...).compile: compiler_options has "
                f"{sorted(compiler_options)}, expected none: numbax has no XLA options. "
                "Leave them out (numbax's code generation is configured by numbax.config).")
        if device_assignment is not None and tuple(device_assignment) != (_device(self._entry),):
            raise NumbaxValueError(
                f"jit({self._fun_name}).lower(...).compile: device_assignment has "
                f"{tuple(device_assignment)}, expected ({_device(self._entry)},), the device "
                "it was lowered for. Lower again with arguments on the device you want.")
        return Compiled(self._entry, self._fun_name, self.args_info, self._in_tree, self._run)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The generated source: every kernel module, the driver last."""
        _check_dialect(self._fun_name, dialect)
        return "\n\n".join(self._entry.exe.sources)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The simplified jaxpr (numbax's compiler input) for dialect None; None for XLA's
        dialects ('stablehlo', 'hlo'), which numbax does not produce."""
        if dialect in ("stablehlo", "hlo", "mhlo"):
            return None
        _check_dialect(self._fun_name, dialect)
        return self._entry.exe.jaxpr

    def cost_analysis(self) -> dict[str, float]:
        """Estimated cost before fusion, with XLA's keys ('flops', 'transcendentals',
        'bytes accessed'): every equation reads its operands and writes its results."""
        return stages_cost.cost_analysis(self._entry.exe.jaxpr, fused=False)


class Compiled(_Program):
    """A compiled function for one signature: call it with the arguments `lower` saw, static
    ones left out."""

    def __call__(self, *args, **kwargs) -> Any:
        leaves = _check_tree(self._fun_name, self._in_tree, args, kwargs)
        return tu.tree_unflatten(self.out_tree, self._run(leaves))

    def as_text(self) -> str:
        """The generated source: every kernel module, the driver last."""
        return "\n\n".join(self._entry.exe.sources)

    @property
    def out_info(self) -> Any:
        """The outputs as a pytree of ShapeDtypeStructs (without weak types, as in JAX)."""
        return _out_info(self._entry)

    @property
    def input_shardings(self) -> Any:
        """Per argument leaf, the device it is read on; None for a leaf the program does not
        read (JAX's value for an argument XLA dropped)."""
        exe = self._entry.exe
        sharding = SingleDeviceSharding(_device(self._entry))
        read = _read_inputs(exe.jaxpr)
        return tu.tree_unflatten(self._in_tree, [sharding if v in read else None
                                                 for v in exe.jaxpr.invars])

    @property
    def output_shardings(self) -> Any:
        sharding = SingleDeviceSharding(_device(self._entry))
        return tu.tree_unflatten(self.out_tree, [sharding] * len(self._entry.exe.out_avals))

    def cost_analysis(self) -> dict[str, float]:
        """Estimated cost after fusion, with XLA's keys ('flops', 'transcendentals',
        'bytes accessed'): the program reads its arguments and writes its results once."""
        return stages_cost.cost_analysis(self._entry.exe.jaxpr, fused=True)

    def memory_analysis(self) -> stages_cost.CompiledMemoryStats:
        """Argument, result, aliased (donated) and generated-code sizes in bytes."""
        return stages_cost.memory_analysis(self._entry.exe)

    def runtime_executable(self) -> Any:
        """The numbax Executable (the loaded driver and its kernels)."""
        return self._entry.exe


@runtime_checkable
class Wrapped(Protocol):
    """A function ready to be traced, lowered and compiled: what `jit` returns. Calling it
    compiles as needed; `trace` and `lower` do so ahead of time."""

    def __call__(self, *args, **kwargs):
        """Executes the wrapped function, lowering and compiling as needed."""
        raise NotImplementedError

    def trace(self, *args, **kwargs) -> Traced:
        """Traces the function for the arguments' types (a `Traced`)."""
        raise NotImplementedError

    def lower(self, *args, **kwargs) -> Lowered:
        """Lowers the function for the arguments' types: `self.trace(...).lower()`."""
        raise NotImplementedError


# ----------------------------------------------------------------------------- helpers


def _check_tree(fun_name: str, in_tree: Any, args: tuple, kwargs: dict) -> list:
    leaves, tree = tu.tree_flatten((args, kwargs))
    if tree != in_tree:
        raise NumbaxTypeError(
            f"jit({fun_name}): compiled function called with arguments of structure {tree}, "
            f"expected {in_tree} (static arguments are not passed again). Call lower() again "
            "for new arguments.")
    return leaves


def _check_dialect(fun_name: str, dialect: str | None) -> None:
    if dialect is not None:
        raise NumbaxValueError(
            f"jit({fun_name}).lower(...): dialect is {dialect!r}, expected None. numbax lowers "
            "to Python source for Numba; there is no StableHLO or HLO text.")


def _device(entry: Any) -> Any:
    return entry.exe.device if entry.exe.device is not None else devices.default_device()


def _out_info(entry: Any) -> Any:
    return tu.tree_unflatten(entry.out_tree, [_shape_dtype_struct(a, False)
                                              for a in entry.exe.out_avals])


def _read_inputs(jaxpr: core.Jaxpr) -> set:
    """The invars an equation or an output reads."""
    read = {v for e in jaxpr.eqns for v in e.invars if isinstance(v, core.Var)}
    read.update(v for v in jaxpr.outvars if isinstance(v, core.Var))
    return read
