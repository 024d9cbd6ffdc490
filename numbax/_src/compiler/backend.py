"""The Backend interface every code generator implements, and the Executable it returns.

A backend says which equations fuse into its loop nests (read off the lowering registry),
renders a loop nest as one kernel module, and builds a whole program: library calls, control
flow and the driver that runs everything in order. compiler.compile runs the shared prefix
(inline, check, simplify, partition) and hands the kernel graph to the backend's `build`."""
from __future__ import annotations

import abc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.compiler import ir, registry
from numbax._src.core import Jaxpr, JaxprEqn


@dataclass
class Executable:
    """A compiled jaxpr. Calling it runs the driver on flat argument buffers (numpy arrays on
    the CPU, device buffers on CUDA), with donated buffers (or None) for the trailing
    parameters, and returns the flat output buffers."""

    backend: str
    driver: Callable[..., Sequence[Any]]
    consts: list[Any]  # leading driver arguments: host callables, then the jaxpr's consts
    jaxpr: Jaxpr  # the simplified jaxpr it implements
    sources: list[str]  # every generated module, the driver last
    donate: tuple[int, ...] = ()  # per trailing parameter: the input leaf it may take
    out_fresh: tuple[bool, ...] = ()  # outputs the driver allocated (may be donated later)
    device: Any = None  # the device it runs on (None: the host)
    out_weak: tuple[bool, ...] = ()  # the traced outputs' weak types (set by compile)

    @property
    def in_avals(self) -> list[core.ShapedArray]:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list[core.ShapedArray]:
        return [x.aval for x in self.jaxpr.outvars]

    def __call__(self, *args: Any, donated: Sequence[Any] = ()) -> Sequence[Any]:
        return self.driver(*self.consts, *args, *donated)


class EagerCall:
    """A primitive's eager implementation with its params bound, as a driver calls it between
    kernels: outputs come back as C-contiguous arrays of the equation's dtypes. The impl is
    looked up at call time, so implementations installed later (pmap workers' collectives)
    are the ones that run."""

    __slots__ = ("primitive", "params", "dtypes")

    def __init__(self, primitive: core.Primitive, params: dict, dtypes: tuple) -> None:
        self.primitive = primitive
        self.params = params
        self.dtypes = dtypes

    def __call__(self, *args: Any) -> list[np.ndarray]:
        return [self.row_major(o, dt) for o, dt in
                zip(self.impl(*args), self.dtypes, strict=True)]

    def impl(self, *args: Any) -> list:
        """The primitive's eager implementation's outputs, as it gives them."""
        return core.impl_rules[self.primitive](*args, **self.params)

    @staticmethod
    def row_major(out: Any, dtype: np.dtype) -> np.ndarray:
        """One output as the C-contiguous array of `dtype` the kernels after it read."""
        return np.asarray(out, dtype=dtype, order="C")


@dataclass
class Program:
    """What a backend builds from: the simplified jaxpr, its kernel graph, the closed-over
    consts, the donated input positions and the function's name (for messages)."""

    jaxpr: Jaxpr
    nodes: list[ir.Node]
    consts: list[Any]
    donated: frozenset = frozenset()
    name: str = ""
    device: Any = None


class Backend(abc.ABC):
    """A code generator: the name its lowerings are registered under, the knobs that enter
    every cache key of its modules, and the three rendering steps."""

    name: str
    # Whether fusion cuts elementwise nests into the parts that share no value (fewer distinct
    # modules to compile, one more kernel call each): fusion.split_unrelated_parts.
    split_unrelated: bool = False

    @abc.abstractmethod
    def config_key(self) -> tuple:
        """The codegen knobs that change generated code (part of every disk-cache key)."""

    def settings_key(self) -> tuple:
        """Every setting a compile reads (config_key and rewrite's switches): a program
        compiled under other settings is built again (pipeline.compile_with)."""
        return self.config_key()

    def fusible(self, eqn: JaxprEqn) -> bool:
        return registry.fusible(eqn, self.name)

    def rewrite(self, jaxpr: Jaxpr) -> Jaxpr:
        """The simplified jaxpr as this backend computes it (default: unchanged)."""
        return jaxpr

    def op_cost(self, eqn: JaxprEqn) -> float:
        """The relative cost of computing a fused equation once per element (a light op is
        1): fusion bounds how much of it a row group recomputes."""
        return 1.0

    @abc.abstractmethod
    def render_loop(self, nest: ir.LoopNest) -> ir.Kernel:
        """One loop nest (or row group) as one kernel module."""

    @abc.abstractmethod
    def build(self, program: Program) -> Executable:
        """Renders and loads the loop nests, library calls, control flow and the driver."""


_warned: set[core.Primitive] = set()


def warn_unlowered(primitive: core.Primitive) -> None:
    """One RuntimeWarning per primitive that no lowering covers: it still runs, through its
    eager implementation called from the driver between kernels."""
    if primitive in _warned or registry.is_registered(primitive):
        return
    _warned.add(primitive)
    warnings.warn(f"jit: primitive {primitive.name} has no compiled lowering; compiled programs "
                  "run its eager implementation between their kernels.", RuntimeWarning,
                  stacklevel=3)
