"""Lowerings of the shape primitives (lax/shape_ops.py): broadcasts, slices and iota join loop
nests (broadcasts and slices as index maps: their readers load the operand where the map
says); reshapes are views; transposes, reversals, pads and concatenations are library calls
(numpy views or copies in the CPU driver, index kernels on CUDA), as is a slice nothing fuses
with (a view where the result stays contiguous)."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.cuda.kernels import index as cuda_index
from numbax._src.compiler.lowerings.forms import Unsupported, no_complex
from numbax._src.compiler.registry import EAGER, Fusion, register
from numbax._src.compiler.source import dtype_ctor, render_value
from numbax._src.core import JaxprEqn
from numbax._src.lax import index_map as im
from numbax._src.lax import pieces
from numbax._src.lax import shape_ops as ls


def _kc(fn: str, *parts: str) -> str:
    """A call of a cpu/runtime/kernels.py function, as the driver's list of outputs."""
    return f"[kc.{fn}({', '.join(parts)})]"


def _contig(x: str) -> str:
    return f"np.ascontiguousarray({x})"


def _full(eqn: JaxprEqn, x: str) -> str:
    return f"np.full({eqn.outvars[0].aval.shape}, {x})"


# ----------------------------------------------------------------------------- broadcast_in_dim


def _broadcast_array(args, eqn):
    x, shape = eqn.invars[0], eqn.params["shape"]
    if x.aval.ndim == 0:
        return _full(eqn, args[0])
    expanded = [1] * len(shape)
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        expanded[d] = x.aval.shape[i]
    return f"np.broadcast_to({_contig(args[0])}.reshape({tuple(expanded)}), {shape}).copy()"


# the CPU driver runs what does not fuse (complex, 0-d) through the eager impl
register(ls.broadcast_in_dim_p, Fusion.INDEX_MAP, cheap=True, reads=im.reads_of)
register(ls.broadcast_in_dim_p, backend="cpu", array=_broadcast_array)
register(ls.broadcast_in_dim_p, backend="cuda", library=cuda_driver.CudaDriver.view)

# ----------------------------------------------------------------------------- reshapes


def _reshape_library(eqn: JaxprEqn, ins: list[str]) -> str:
    return f"[{ins[0]}.reshape({eqn.outvars[0].aval.shape})]"


def _reshape_array(args, eqn):
    x, out = eqn.invars[0].aval, eqn.outvars[0].aval
    if out.ndim == 0:
        return args[0] if x.ndim == 0 else f"{_contig(args[0])}.reshape(-1)[0]"
    if x.ndim == 0:
        return _full(eqn, args[0])
    return f"{_contig(args[0])}.reshape({out.shape})"  # (a view: control_flow copies it)


for _prim in (ls.reshape_p, ls.squeeze_p):
    register(_prim, backend="cpu", library=_reshape_library, array=_reshape_array)
    register(_prim, backend="cuda", library=cuda_driver.CudaDriver.view)
register(ls.copy_p, backend="cpu", library=lambda eqn, ins: f"[np.array({ins[0]})]")
register(ls.copy_p, backend="cuda", library=cuda_driver.CudaDriver.view)

# ----------------------------------------------------------------------------- transpose


def _transpose_library(eqn: JaxprEqn, ins: list[str]) -> str:
    perm = render_value(eqn.params["permutation"])
    return _kc("contiguous", f"np.transpose({ins[0]}, {perm})")


def _transpose_array(args: list[str], eqn: JaxprEqn) -> str:
    """A matrix's transpose as `.T`: Numba takes seconds to compile its first
    transpose-by-tuple (the general form)."""
    perm = tuple(eqn.params["permutation"])
    if perm == (1, 0):
        return _contig(f"{args[0]}.T")
    return _contig(f"{args[0]}.transpose({perm})")


register(ls.transpose_p, backend="cpu", library=_transpose_library, array=_transpose_array)
register(ls.transpose_p, backend="cuda", library=cuda_driver.CudaDriver.transpose)

# ----------------------------------------------------------------------------- slices, pads


def _slice_library(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return _kc("slice_", ins[0], *(render_value(p[k]) for k in (
        "start_indices", "limit_indices", "strides")))


def _roll_array(args, eqn):
    """A roll inside compiled control flow (Numba's np.roll takes no axis): its two slices
    concatenated."""
    shift, axis = eqn.params["shift"], eqn.params["axis"]
    cut = eqn.invars[0].aval.shape[axis] - shift if shift > 0 else -shift
    head = ", ".join([":"] * axis + [f"{cut}:"])
    tail = ", ".join([":"] * axis + [f":{cut}"])
    return f"np.concatenate(({args[0]}[{head}], {args[0]}[{tail}]), axis={axis})"


def _slice_array(args, eqn):
    p = eqn.params
    strides = p["strides"] or (1,) * len(p["start_indices"])
    parts = [f"{s}:{e}:{st}" for s, e, st in
             zip(p["start_indices"], p["limit_indices"], strides, strict=True)]
    return f"{args[0]}[{', '.join(parts)}].copy()"


# A slice fuses into its readers as XLA's fusion does (a strided slice was a copy each); one
# that no reader takes stays a library call (fusion._Placer), a view where it can be.
register(ls.slice_p, Fusion.INDEX_MAP, cheap=True, reads=im.reads_of)
register(ls.slice_p, backend="cpu", scalar_ok=no_complex, library=_slice_library,
         array=_slice_array)
register(ls.slice_p, backend="cuda", library=cuda_driver.planned(cuda_index.slice_))
# numbax-internal: chains of the maps above composed into one (compiler/compose_maps.py, CPU)
register(im.index_map_p, Fusion.INDEX_MAP, cheap=True, reads=im.reads_of)
register(im.index_map_p, backend="cpu", scalar_ok=no_complex, library=lambda e, ins: _kc(
    "index_map", ins[0], render_value(e.params["reads"]), render_value(e.params["shape"])))
register(im.roll_p, Fusion.INDEX_MAP, cheap=True, reads=im.roll_reads)
register(im.roll_p, backend="cpu", scalar_ok=no_complex, library=lambda e, ins: _kc(
    "roll", ins[0], str(e.params["shift"]), str(e.params["axis"])), array=_roll_array)
register(ls.rev_p, backend="cpu",
         library=lambda e, ins: _kc("rev", ins[0], render_value(e.params["dimensions"])))
register(ls.rev_p, backend="cuda", library=cuda_driver.planned(cuda_index.rev))


def _pad_array(args, eqn):
    """lax.pad inside compiled control flow, as one expression Numba compiles: negative edges
    cropped by a slice, then per padded axis a concatenation between filled blocks (the
    transpose of a slice, e.g. an LSTM's gate gradients, is such a pad). Interior padding has
    no such form (the driver's host loop runs it)."""
    x = eqn.invars[0].aval
    config = eqn.params["padding_config"]
    if x.ndim == 0 or any(interior for _, _, interior in config):
        raise Unsupported("pad with interior padding")
    expr, shape = args[0], list(x.shape)
    if any(lo < 0 or hi < 0 for lo, hi, _ in config):
        kept = [f"{max(-lo, 0)}:{n - max(-hi, 0)}" for n, (lo, hi, _) in zip(shape, config,
                                                                          strict=True)]
        expr = f"{expr}[{', '.join(kept)}]"
        shape = [n - max(-lo, 0) - max(-hi, 0) for n, (lo, hi, _) in zip(shape, config,
                                                                          strict=True)]
    fill = dtype_ctor(x.dtype)
    for d, (lo, hi, _) in enumerate(config):
        edges = [max(lo, 0), max(hi, 0)]
        if not any(edges):
            continue
        blocks = [f"np.full({(*shape[:d], e, *shape[d + 1:])}, {args[1]}, {fill})"
                  for e in edges]
        parts = [blocks[0]] * bool(edges[0]) + [expr] + [blocks[1]] * bool(edges[1])
        expr = f"np.concatenate(({', '.join(parts)}), axis={d})"
        shape[d] += sum(edges)
    return expr if expr != args[0] else f"{args[0]}.copy()"


register(ls.pad_p, backend="cpu",
         library=lambda e, ins: _kc("pad", ins[0], ins[1],
                                    render_value(e.params["padding_config"])),
         array=_pad_array)
register(ls.pad_p, backend="cuda", library=cuda_driver.planned(cuda_index.pad))


def _concatenate_library(eqn: JaxprEqn, ins: list[str]) -> str:
    return _kc("concatenate", f"({''.join(a + ', ' for a in ins)})", str(eqn.params["dimension"]))


def _concatenate_array(args, eqn):
    if any(x.aval.ndim == 0 for x in eqn.invars):
        raise Unsupported("concatenate")
    return f"np.concatenate(({''.join(x + ', ' for x in args)}), axis={eqn.params['dimension']})"


register(ls.concatenate_p, backend="cpu", library=_concatenate_library,
         array=_concatenate_array)
register(ls.concatenate_p, backend="cuda", library=cuda_driver.planned(cuda_index.concatenate))

# ----------------------------------------------------------------------------- iota


def _iota_library(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return _kc("iota", render_value(np.dtype(p["dtype"])), render_value(p["shape"]),
               render_value(p["dimension"]))


def _iota_array(args, eqn):
    out = eqn.outvars[0].aval
    if out.ndim != 1:
        raise Unsupported("iota")
    return f"np.arange({out.shape[0]}).astype({dtype_ctor(out.dtype)})"


# iota joins nests as the loop index along its dimension (integers and floats)
register(ls.iota_p, Fusion.SOURCE,
         scalar_ok=lambda e: e.outvars[0].aval.dtype.kind in "iuf")
register(ls.iota_p, backend="cpu", library=_iota_library, array=_iota_array)
register(ls.iota_p, backend="cuda", library=cuda_driver.planned(cuda_index.iota))

# split, stack, unstack, tile (lax/pieces.py): numpy copies in the driver
for _prim in (pieces.split_p, pieces.stack_p, pieces.unstack_p, pieces.tile_p):
    register(_prim, backend="cpu", library=EAGER)
