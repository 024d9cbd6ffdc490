"""The serial time model behind the CPU thread runtime's choice (runtime/threads.py,
docs/performance.md "CPU thread runtime"): a loop nest's estimated serial time from its
equations and the bytes it moves."""
from __future__ import annotations

import math

import numpy as np

from numbax._src.compiler import fusion, ir, registry
from numbax._src.compiler.registry import Fusion
from numbax._src.core import Jaxpr, JaxprEqn
from numbax._src.lax import dot as ld
from numbax._src.lax.control_flow.conditionals import cond_p
from numbax._src.lax.control_flow.loops import scan_p, while_p

# Nanoseconds per element of a vectorised scalar form, cheap or heavy (exp, log,
# tanh, erf, ...), and per byte read or written (one core streams ~10 GB/s).
NS_PER_LIGHT_OP = 0.25
NS_PER_HEAVY_OP = 2.5
NS_PER_BYTE = 0.1
WHILE_TRIPS = 64  # a while loop's assumed trip count when sizing the work of compiled control flow


def work_ns(nest: ir.LoopNest) -> float:
    """Estimated serial time of the nest at its sizes, in nanoseconds."""
    return eqns_ns(nest.shape, nest.eqns, [*nest.inputs, *nest.outputs])


def eqns_ns(shape: tuple[int, ...], eqns: list[JaxprEqn], arrays: list) -> float:
    """Estimated serial time, in nanoseconds, of elementwise `eqns` over `shape` that read and
    write the variables `arrays` (a nest's, or one inside compiled control flow)."""
    size = float(np.prod(shape, dtype=np.float64))
    per_element = 0.0
    for e in eqns:
        if fusion.kind_of(e) in (Fusion.INDEX_MAP, Fusion.SOURCE):
            continue
        low = registry.lowering(e.primitive, "cpu")
        per_element += NS_PER_HEAVY_OP if low is not None and low.heavy else NS_PER_LIGHT_OP
    nbytes = sum(float(np.prod(v.aval.shape, dtype=np.float64)) * v.aval.dtype.itemsize
                 for v in arrays)
    return size * per_element + nbytes * NS_PER_BYTE


def flow_ops(jaxpr: Jaxpr) -> int:
    """A rough count of the element operations of one run of `jaxpr` (a product counts its
    multiply-adds; while loops count WHILE_TRIPS runs)."""
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive is while_p:
            total += WHILE_TRIPS * (flow_ops(eqn.params["body_jaxpr"].jaxpr)
                                    + flow_ops(eqn.params["cond_jaxpr"].jaxpr))
        elif eqn.primitive is scan_p:
            total += eqn.params["length"] * flow_ops(eqn.params["jaxpr"].jaxpr)
        elif eqn.primitive is cond_p:
            total += max(flow_ops(b.jaxpr) for b in eqn.params["branches"])
        elif eqn.primitive is ld.dot_general_p:  # a multiply-add per output and contraction
            (contract, _), _ = eqn.params["dimension_numbers"]
            x = eqn.invars[0].aval
            total += eqn.outvars[0].aval.size * math.prod(x.shape[d] for d in contract)
        else:
            total += sum(max(v.aval.size, 1) for v in eqn.outvars)
    return total
