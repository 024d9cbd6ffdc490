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
                  eligible=lambda name, parallel: True) -> list[str]:
    """The functions (each with `decorator`, taking the row index i0 and the kernel's `params`)
    that run one row of the `eligible` (name, parallel) variants whose rows are `width` wide
    (0: none) and call fastmath; each such body in `bodies` becomes a loop calling its row
    function. The prange variant's rows are the serial
    one's, so one row function serves both (a `_narrow` twin has its own)."""
    rows_apart: dict[str, str] = {}  # a row function's name -> its body
    for j, ((name, parallel), text) in enumerate(zip(variants, bodies, strict=True)):
        if not ON_THIS_HOST or width < OUTLINE_MIN_WIDTH or not eligible(name, parallel):
            continue
        outlined = _outline_rows(text, params)
        if outlined is not None and "fm." in outlined[1]:
            row_name = "kernel_row" + "_narrow" * name.endswith("_narrow")
            rows_apart.setdefault(row_name, outlined[1])
            bodies[j] = outlined[0].replace(_ROW_CALL, row_name)
    return [f"{decorator}\ndef {name}(i0, {params}):\n{text}"
            for name, text in rows_apart.items()]


def _outline_rows(text: str, params: str) -> tuple[str, str] | None:
    """(the loop over rows calling `_ROW_CALL(i0, params)`, the row function's body) of a
    kernel body whose outer loop holds everything after its prelude; None where the body is
    not of that shape. The row function repeats the prelude (sizes and scalars read again: a
    few loads a row), which therefore must not hold anything the rows update."""
    lines = text.rstrip("\n").split("\n")
    at = next((j for j, line in enumerate(lines) if line.startswith("    for i0 in ")), None)
    if at is None or not lines[at + 1:] or any(
            line.strip() and not line.startswith("        ") for line in lines[at + 1:]):
        return None
    prelude = lines[:at]
    loop = [*prelude, lines[at], f"        {_ROW_CALL}(i0, {params})"]
    row = [*prelude, *(line[4:] for line in lines[at + 1:])]
    return "\n".join(loop) + "\n", "\n".join(row) + "\n"
