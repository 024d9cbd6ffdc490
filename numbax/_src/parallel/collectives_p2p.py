"""The SPMD workers' ragged_all_to_all, psend and precv (lax/parallel_ragged.py and
lax/parallel_sendrecv.py hold their math): added to collectives.WORKER_IMPLS, so workers run
them across devices as they run the other collectives."""
from __future__ import annotations

import numpy as np

from numbax._src.extend_core import Token
from numbax._src.lax import parallel_ragged, parallel_sendrecv
from numbax._src.parallel import collectives


def _ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets,
                       recv_sizes, *, axis_name, axis_index_groups):
    """Two exchanges (every member's offsets and sizes, then its rows); each member writes
    the slices sent to it into its copy of output, in sender-then-slice order (JAX's)."""
    comm = collectives.current()
    api = "ragged_all_to_all"
    metas_in = [np.asarray(m) for m in (input_offsets, send_sizes, output_offsets)]
    meta = np.stack(metas_in).astype(np.result_type(*metas_in))  # no wider than the operands
    metas = comm.exchange(api, axis_name, meta, np.stack)
    operands = comm.exchange(api, axis_name, operand, np.stack)
    me = comm.position(api, axis_name)
    n, k = len(metas), metas.shape[2]
    spd = k // n
    result = np.array(output, copy=True)
    for s in range(n):
        for t in range(me * spd, (me + 1) * spd):
            first, size, start = (int(v) for v in metas[s, :, t])
            size = max(0, min(size, operands.shape[1] - first, result.shape[0] - start))
            result[start:start + size] = operands[s, first:first + size]
    return [result]


def _psend(x, *, axis_name, perm):
    """Posts x to this call's mailbox (the exchange happens at the matching precv)."""
    comm = collectives.current()
    comm.mailbox.setdefault((axis_name, perm), []).append(np.asarray(x))
    return [Token.new()]


def _precv(token, *, out_shape, axis_name, perm):
    """ppermute of the earliest unmatched psend's value of the same axis_name and perm."""
    comm = collectives.current()
    queue = comm.mailbox.get((axis_name, perm))
    if not queue:
        raise ValueError(
            f"lax.precv: no psend over {axis_name!r} with perm {list(perm)} came before it. "
            "Call psend with the same axis_name and perm first.")
    sent = queue.pop(0)
    if sent.shape != out_shape.shape or sent.dtype != out_shape.dtype:
        raise ValueError(
            f"lax.precv: out_shape is {out_shape.str_short()}, but the matching psend sent "
            f"{sent.dtype}{list(sent.shape)}. Give out_shape the shape and dtype sent.")
    sources = {dst: src for src, dst in perm}
    src = sources.get(comm.position("precv", axis_name))
    return [comm.exchange("precv", axis_name, sent,
                          lambda ps: ps[src] if src is not None else np.zeros_like(ps[0]))]


collectives.WORKER_IMPLS.update({
    parallel_ragged.ragged_all_to_all_p: _ragged_all_to_all,
    parallel_sendrecv.psend_p: _psend,
    parallel_sendrecv.precv_p: _precv,
})
