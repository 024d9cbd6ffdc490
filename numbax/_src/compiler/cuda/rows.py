"""CUDA row groups (reductions over trailing axes and the passes fused after them: softmax,
logsumexp, layer norm): a warp or a block per row by the row's width, the row kept in registers
across the passes, warp shuffles for the reductions."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler import fusion, ir
from numbax._src.compiler.cuda.config import Config, cdiv, prod
from numbax._src.compiler.cuda.loops import (
    CudaKernel,
    Lane,
    acc_dtype,
    acc_init,
    at,
    combine,
    emit,
    is_reduction,
    kernel_def,
    lane_lines,
    module_kernel,
    monoid,
    reductions,
    scalar_loads,
    shared_dtype,
    shuffle,
)
from numbax._src.compiler.fusion import recompute
from numbax._src.compiler.source import cast
from numbax._src.core import JaxprEqn, Var


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


class RowPlan:
    """The geometry of a row-group kernel, chosen from the (compile-time) row width:
      - "warp": `group` (a power of two <= 32) threads per row, several rows per block, the
        row's `slots` elements per thread kept in registers across the passes, reductions by
        warp shuffles (xor butterfly) only;
      - "block": one block of `threads` per row, `slots` elements per thread in registers,
        reductions by warp shuffles then one shared slot per warp;
      - "loop": one block per row too wide for registers: every pass re-reads the row."""

    def __init__(self, cfg: Config, width: int) -> None:
        if width <= 32 * cfg.row_slots:
            self.kind = "warp"
            self.group = min(32, _pow2_at_least(cdiv(width, 4)))
            self.threads = max(cfg.row_threads, self.group)
            self.step = self.group
        else:
            self.threads = min(cfg.row_block_max, max(64, _pow2_at_least(cdiv(width, 8))))
            self.kind = "block" if cdiv(width, self.threads) <= cfg.row_slots else "loop"
            if self.kind == "loop":
                self.threads = cfg.row_block_max
            self.group = self.threads
            self.step = self.threads
        self.slots = cdiv(width, self.step) if self.kind != "loop" else 0
        self.warps = max(1, self.threads // 32)


def _from_shared(red: JaxprEqn, expr: str) -> str:
    return f"({expr} != 0)" if acc_dtype(red) == np.bool_ else expr


def _row_reduce(k: CudaKernel, plan: RowPlan, red: JaxprEqn, acc: str, j: int,
                pad: str) -> list[str]:
    """Combines `acc` over the threads of a row; every one of them ends with the same value."""
    dt = red.invars[0].aval.dtype

    def comb(a: str, b: str, _dtype) -> str:
        return combine(red, a, b)

    lines = []
    w = f"w{j}"  # one name per reduction: numba types each variable once
    width = min(plan.group, 32)
    o = width // 2
    while o > 0:  # xor butterfly within each group of `width` lanes
        if k.cfg.shuffle:  # every lane shuffles, then combines
            lines += [f"{pad}{w} = {shuffle(red, acc, str(o), 'xor')}",
                      f"{pad}{acc} = {comb(acc, w, dt)}"]
        else:
            lines += [f"{pad}sx{j}[tid] = {acc}", f"{pad}cuda.syncthreads()",
                      f"{pad}{w} = {_from_shared(red, f'sx{j}[tid ^ {o}]')}",
                      f"{pad}cuda.syncthreads()", f"{pad}{acc} = {comb(acc, w, dt)}"]
        o //= 2
    if plan.kind == "warp":
        if width > 1 and monoid(red).selects:
            # ties of 0.0 and -0.0 leave the lanes apart: take the group leader's value
            if k.cfg.shuffle:
                lines.append(f"{pad}{acc} = {shuffle(red, acc, 'tid % 32 - ln', 'idx')}")
            else:
                lines += [f"{pad}sx{j}[tid] = {acc}", f"{pad}cuda.syncthreads()",
                          f"{pad}{acc} = {_from_shared(red, f'sx{j}[tid - ln]')}",
                          f"{pad}cuda.syncthreads()"]
        return lines
    lines += [f"{pad}if tid % 32 == 0:", f"{pad}    sm{j}[tid // 32] = {acc}",
              f"{pad}cuda.syncthreads()", f"{pad}{acc} = {_from_shared(red, f'sm{j}[0]')}"]
    if plan.warps > 1:
        lines += [f"{pad}for wq in range(1, {plan.warps}):",
                  f"{pad}    {w} = {_from_shared(red, f'sm{j}[wq]')}",
                  f"{pad}    {acc} = {comb(acc, w, dt)}"]
    return lines


def render_rows(nest: ir.LoopNest, cfg: Config) -> ir.Kernel:
    """A row group (reductions over the trailing axes and the passes fused after them, e.g.
    softmax): see RowPlan for the three geometries."""
    k = CudaKernel(nest, cfg)
    kept = fusion.trailing(nest)
    pad = "    "
    m = prod(nest.shape[:kept])
    width = prod(nest.shape[kept:])
    plan = RowPlan(cfg, width)
    passes = nest.passes or [("row", list(nest.eqns))]
    reds = reductions(nest.eqns)
    lines = ["    tid = cuda.threadIdx.x"]
    for j, e in enumerate(reds):
        if plan.kind != "warp":
            lines.append(f"{pad}sm{j} = cuda.shared.array({plan.warps}, {shared_dtype(e)})")
        if not cfg.shuffle:
            lines.append(f"{pad}sx{j} = cuda.shared.array({plan.threads}, {shared_dtype(e)})")
    lines += scalar_loads(k, pad)
    if plan.kind == "warp":
        per_block = plan.threads // plan.group
        lines += [f"{pad}ln = tid % {plan.group}",
                  f"{pad}rb = cuda.blockIdx.x * {per_block}",
                  f"{pad}while rb < {m}:  # uniform over the block: every lane shuffles",
                  f"{pad}    r = rb + tid // {plan.group}",
                  f"{pad}    rv = r < {m}",
                  f"{pad}    rr = min(r, {m - 1})"]
        row, leader, valid = "rr", "rv and ln == 0", "rv"
        blocks = max(1, min(cdiv(m, per_block), cfg.max_blocks))
        step = f"rb += cuda.gridDim.x * {per_block}"
        lane_index = "ln"
    else:
        lines += [f"{pad}r = cuda.blockIdx.x", f"{pad}while r < {m}:"]
        row, leader, valid = "r", "tid == 0", None
        blocks = max(1, min(m, cfg.max_blocks))
        step = "r += cuda.gridDim.x"
        lane_index = "tid"
    pad += "    "
    slots: list[Lane] = []
    guards: list[str | None] = []
    if plan.kind != "loop":
        lines.append(f"{pad}fb = {row} * {width}")
        for i in range(plan.slots):
            q = f"{lane_index} + {i * plan.step}" if i else lane_index
            if (i + 1) * plan.step <= width:
                lines.append(f"{pad}f{i} = fb + {q}")
                guards.append(None)
            else:  # padding lanes read the row's last element and neither store nor reduce it
                lines += [f"{pad}v{i} = {q} < {width}", f"{pad}f{i} = fb + min({q}, {width - 1})"]
                guards.append(f"v{i}")
            slots.append(Lane(f"f{i}", f"_{i}"))
    slot_vals: list[dict[Var, str]] = [{} for _ in slots]
    seed: dict[Var, str] = {}
    row_defs: list[JaxprEqn] = []
    n_acc = 0

    def both(a: str | None, b: str | None) -> str | None:
        return f"{a} and {b}" if a and b else a or b

    for kind, eqns in passes:
        if kind == "outer":
            lane = Lane(row, "_o")
            values = emit(k, lane, eqns, {}, seed=seed, store_guard=leader)
            lines += lane_lines([lane], pad)
            seed.update({e.outvars[0]: values[e.outvars[0]] for e in eqns})
            continue
        rs = reductions(eqns)
        accs = {e.outvars[0]: f"acc{n_acc + j}" for j, e in enumerate(rs)}
        lines += [f"{pad}{accs[e.outvars[0]]} = {acc_init(e)}" for e in rs]
        if plan.kind == "loop":
            again = recompute(eqns, row_defs, seed)
            lines += [f"{pad}q = tid", f"{pad}while q < {width}:",
                      f"{pad}    f = {row} * {width} + q"]
            lane = Lane("f", "")
            emit(k, lane, again + eqns, accs, seed=seed, no_store=frozenset(
                e.outvars[0] for e in again))
            lines += lane_lines([lane], pad + "    ") + [f"{pad}    q += {plan.threads}"]
        else:  # every slot's values of earlier passes are still in registers: nothing re-read
            lanes = []
            for i, prev in enumerate(slots):
                lane = Lane(prev.flat, prev.suffix)
                lane.loaded = prev.loaded
                slot_vals[i] = emit(k, lane, eqns, accs, seed={**seed, **slot_vals[i]},
                                     store_guard=both(valid, guards[i]), acc_guard=guards[i])
                lanes.append(lane)
            lines += lane_lines(lanes, pad)
        for j, e in enumerate(rs):
            acc, out = accs[e.outvars[0]], e.outvars[0]
            lines += _row_reduce(k, plan, e, acc, n_acc + j, pad)
            name = f"r{len(seed)}"
            lines.append(f"{pad}{name} = {cast(out.aval.dtype, acc)}")
            seed[out] = name
            if out in k.out_names:
                lines += [f"{pad}if {leader}:", f"{pad}    {at(k.out_names[out], row)} = {name}"]
        n_acc += len(rs)
        row_defs.extend(e for e in eqns if not is_reduction(e))
    if plan.kind != "warp" and reds and blocks < m:
        lines.append(f"{pad}cuda.syncthreads()  # the shared slots are reused by the next row")
    lines.append(f"{pad}{step}")
    launches = [ir.Launch("kernel", blocks, plan.threads)] if m else []
    return module_kernel(k, kernel_def(k) + "\n".join(lines) + "\n", launches)


