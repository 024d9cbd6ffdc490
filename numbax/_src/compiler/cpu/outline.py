"""Loops over rows whose rows run in a function of their own (`row_functions`): the CPU
kernels' outer loop calls `kernel_row(i0, ...)` where each row's vector loops are long and call
fast math."""
from __future__ import annotations

from numbax._src.compiler.cpu.runtime import host_isa

# Row kernels whose rows are this wide and whose passes call fastmath run each row in a function
# of its own (`row_functions`). Inside the loop over rows LLVM kept exp's constants
# live across every row and, short of AVX2's 16 vector registers, reloaded them at each vector
# step: exp(x - row max) over 1000-wide rows took 1.3-1.45x the flat exp's time on one Zen 3
# core, one call a row gave the flat time. A call a row costs more than it saves on narrow
# rows (softmax of 10-wide rows 1.6x slower, 32-wide 1.2x; even at 100), and rows of whole
# float32 blocks keep the loop (rows.py). Only where Numba's target lacks AVX-512: with its 32
# vector registers the constants stayed in registers, and on the 16-core Xeon the outlined
# rows lost (tanh(x + b) and gelu(x + b) over 2048 x 512: 1.1-1.9x the nested form's time).
OUTLINE_MIN_WIDTH = 256
ON_THIS_HOST = not host_isa.numba_target_has("avx512f")


_ROW_CALL = "<row>"  # `_outline_rows`' stand-in for the row function's name


def row_functions(params: str, decorator: str, variants: list, bodies: list[str], width: int,
                  depth: int = 1, eligible=lambda name, parallel: True) -> list[str]:
    """The functions (each with `decorator`) that run one row of the `eligible` (name,
    parallel) variants whose rows are `width` wide (0: none) and call fastmath; a row is the
    body inside the outer `depth` loops (i0, ..., i<depth-1>, then the kernel's `params`).
    Each such body in `bodies` becomes those loops calling its row function. The prange
    variant's rows are the serial one's, so one row function serves both (a `_narrow` twin
    has its own)."""
    rows_apart: dict[str, str] = {}  # a row function's name -> its body
    indices = ", ".join(f"i{d}" for d in range(depth))
    for j, ((name, parallel), text) in enumerate(zip(variants, bodies, strict=True)):
        if not ON_THIS_HOST or width < OUTLINE_MIN_WIDTH or depth < 1 \
                or not eligible(name, parallel):
            continue
        outlined = _outline_rows(text, f"{indices}, {params}", depth)
        if outlined is not None and "fm." in outlined[1]:
            row_name = "kernel_row" + "_narrow" * name.endswith("_narrow")
            rows_apart.setdefault(row_name, outlined[1])
            bodies[j] = outlined[0].replace(_ROW_CALL, row_name)
    return [f"{decorator}\ndef {name}({indices}, {params}):\n{text}"
            for name, text in rows_apart.items()]


def _outline_rows(text: str, args: str, depth: int) -> tuple[str, str] | None:
    """(the outer `depth` loops calling `_ROW_CALL(args)`, the row function's body) of a kernel
    body whose `depth` outer loops are nested directly, the innermost holding everything after
    the prelude; None where the body is not of that shape. The row function repeats the
    prelude (sizes and scalars read again: a few loads a row), which therefore must not hold
    anything the rows update."""
    lines = text.rstrip("\n").split("\n")
    at = next((j for j, line in enumerate(lines) if line.startswith("    for i0 in ")), None)
    if at is None:
        return None
    headers = lines[at:at + depth]
    inner = " " * 4 * (depth + 1)
    if len(headers) < depth or any(not line.startswith(" " * 4 * (d + 1) + f"for i{d} in ")
                                   for d, line in enumerate(headers)) \
            or not lines[at + depth:] or any(line.strip() and not line.startswith(inner)
                                             for line in lines[at + depth:]):
        return None
    prelude = lines[:at]
    loop = [*prelude, *headers, f"{inner}{_ROW_CALL}({args})"]
    row = [*prelude, *(line[4 * depth:] for line in lines[at + depth:])]
    return "\n".join(loop) + "\n", "\n".join(row) + "\n"
