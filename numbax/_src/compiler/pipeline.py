"""The backend-neutral front of compilation: inline call-like equations, check, simplify and
partition into a kernel graph; the backend renders what comes out."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from numbax._src import typecheck
from numbax._src.compiler import fusion, hoist, inline, passes, program_key, unroll, update_pads
from numbax._src.compiler.backend import Backend, Executable, Program
from numbax._src.core import ClosedJaxpr, Jaxpr

# Executables of programs without consts, by structure and settings, the least recently used
# dropped first: an eager loop or a jit of a fresh lambda traced again builds nothing.
MEMO_SIZE = 256
_BUILT: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


def prepare(jaxpr: Jaxpr) -> Jaxpr:
    """The jaxpr with call-like equations inlined, scans that ask for it unrolled, typechecked,
    loop bodies' updates of a fill written as pads (update_pads.py) and simplified, and
    loop-invariant equations moved out of loop bodies (after the bodies' simplification, which
    inlines their scalar broadcasts into the readers: hoisted, those would be arrays; the
    equations two loops both hoisted merged by CSE), then small work on constants alone moved
    first (hoist.constants_first)."""
    jaxpr = typecheck.check_jaxpr(unroll.unroll_scans(inline.inline_calls(jaxpr)))
    jaxpr = passes.simplify(update_pads.pads_in_bodies(jaxpr))
    jaxpr = passes.dce(passes.cse(hoist.hoist_invariants(jaxpr)))
    return typecheck.check_jaxpr(hoist.constants_first(jaxpr))


def compile_with(closed: ClosedJaxpr, backend: Backend, donated: frozenset = frozenset(),
                 name: str = "", device: Any = None) -> Executable:
    """`closed` compiled by `backend` (donated: input positions outputs may be written into);
    a program equal to one compiled before (program_key.py) under the same settings gets the
    Executable built then."""
    structure = program_key.key(closed)
    memo_key = (structure, backend.name, backend.settings_key(), donated, name, device)
    try:
        hash(memo_key)  # (a device or sharding without a hash: built every time)
    except TypeError:
        structure = None
    if structure is None:
        return _build(closed, backend, donated, name, device)
    with _LOCK:
        exe = _BUILT.get(memo_key)
        if exe is not None:
            _BUILT.move_to_end(memo_key)
            return exe
    exe = _build(closed, backend, donated, name, device)
    with _LOCK:
        _BUILT[memo_key] = exe
        while len(_BUILT) > MEMO_SIZE:
            _BUILT.popitem(last=False)
    return exe


def forget_built() -> None:
    """Drops the Executables compile_with keeps (numbax.clear_caches)."""
    with _LOCK:
        _BUILT.clear()


def _build(closed: ClosedJaxpr, backend: Backend, donated: frozenset, name: str,
           device: Any) -> Executable:
    jaxpr = backend.rewrite(prepare(closed.jaxpr))
    nodes = fusion.partition(jaxpr, backend.fusible, backend.op_cost, backend.split_unrelated)
    consts: Sequence[Any] = closed.consts
    exe = backend.build(Program(jaxpr, nodes, list(consts), donated, name, device))
    exe.out_weak = tuple(x.aval.weak_type for x in closed.jaxpr.outvars)
    return exe
