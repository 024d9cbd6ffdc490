"""jax.debug.visualize_array_sharding / visualize_sharding / inspect_array_sharding: the box
drawing of which device holds which block of a 1-d or 2-d array.

The layout follows JAX's (cell sizes from the block's share of the array, scaled, clamped to
[min_width, max_width], text centred), drawn as JAX draws it when its output is not a colour
terminal: a table of box-drawing characters, rendered the way `rich` lays out such a table
(when the table is wider than max_width the widest columns shrink first, then all evenly, and
text wraps at spaces). numbax draws it itself, so it needs neither rich nor matplotlib."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.sharding.sharded_array import sharding_of
from numbax._src.sharding.shardings import Sharding

_HEIGHT_TO_WIDTH = 2.5


def _chunk(size: int, s: slice) -> tuple[int, float]:
    """(the block's position along the dimension, its share of the dimension)."""
    start = 0 if s.start is None else s.start
    stop = size if s.stop is None else s.stop
    length = max(stop - start, 1)
    return start // length, (stop - start) / size


def _cells(shape: tuple, sharding: Sharding, scale: float, min_width: int,
           max_width: int) -> tuple[list[list[str]], list[list[tuple]]]:
    """The label and (top, right, bottom, left) padding of each cell, by row and column."""
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    kind = next(iter(sharding.device_set)).platform.upper()
    devs: dict[tuple, set] = {}
    sizes: dict[tuple, tuple] = {}
    for dev, index in sharding.devices_indices_map(tuple(shape)).items():
        if len(shape) == 2:
            (r, h), (c, w) = _chunk(shape[0], index[0]), _chunk(shape[1], index[1])
        else:
            (c, w), r, h = _chunk(shape[0], index[0]), 0, None
        devs.setdefault((r, c), set()).add(dev.id)
        sizes[(r, c)] = (h, w)
    rows = max(r for r, _ in devs) + 1
    cols = max(c for _, c in devs) + 1
    labels, pads = [], []
    for i in range(rows):
        labels.append([])
        pads.append([])
        for j in range(cols):
            text = f"{kind} " + ",".join(str(d) for d in sorted(devs[i, j]))
            h, w = sizes[i, j]
            width = min(max(int(w * base_width * _HEIGHT_TO_WIDTH), min_width), max_width)
            height = 1 if h is None else int(h * base_height)
            left, extra = divmod(width - len(text) - 2, 2)
            top, extra_v = divmod(height - 2, 2)
            labels[-1].append(text)
            pads[-1].append((max(top, 0), max(left + extra, 0), max(top + extra_v, 0),
                             max(left, 0)))
    return labels, pads


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int],
                  values: list[int]) -> list[int]:
    """Takes `total` off `values` in proportion to `ratios`, at most `maximums` each."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums, strict=True)]
    remaining_ratio, remaining = sum(ratios), total
    out = []
    for r, m, v in zip(ratios, maximums, values, strict=True):
        if r and remaining_ratio > 0:
            cut = min(m, round(r * remaining / remaining_ratio))
            out.append(v - cut)
            remaining -= cut
            remaining_ratio -= r
        else:
            out.append(v)
    return out


def _fit(widths: list[int], room: int) -> list[int]:
    """Column widths shrunk to `room`: the widest columns down to the next widest first, then
    every column evenly (rich's table layout)."""
    while sum(widths) > room:
        widest = max(widths)
        second = max([w for w in widths if w != widest], default=0)
        if widest == second or widest == 0:
            break
        excess = sum(widths) - room
        ratios = [1 if w == widest else 0 for w in widths]
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths),
                               widths)
    if sum(widths) > room:
        excess = sum(widths) - room
        widths = _ratio_reduce(excess, [1] * len(widths), widths, widths)
    return widths


def _measure(text: str, pad: tuple, room: int) -> int:
    """A padded cell's width in a table of `room` columns (rich's Padding measure)."""
    extra = pad[1] + pad[3]
    if room - extra < 1:
        return room
    return min(extra + len(text), room)


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap at spaces; a word longer than the width ends in an ellipsis."""
    if width <= 0:
        return []
    lines: list[str] = []
    for word in text.split(" "):
        if len(word) > width:
            word = word[:width - 1] + "…"
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        elif word:
            lines.append(word)
    return lines


def _render_cell(text: str, pad: tuple, width: int) -> list[str]:
    top, right, bottom, left = pad
    inner = width - left - right
    body = [" " * left + _centre(line, inner) + " " * right for line in _wrap(text, inner)]
    blank = " " * width
    return [blank] * top + [line[:width].ljust(width) for line in body] + [blank] * bottom


def _centre(line: str, width: int) -> str:
    extra = width - len(line)
    return " " * (extra // 2) + line + " " * (extra - extra // 2)


def draw(shape: Sequence[int], sharding: Sharding, *, scale: float = 1.0,
         min_width: int = 9, max_width: int = 80) -> str:
    """The box drawing of `sharding` over an array of `shape`, as text."""
    shape = tuple(int(d) for d in shape)
    if not 1 <= len(shape) <= 2:
        raise NumbaxValueError(
            "`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    labels, pads = _cells(shape, sharding, scale, min_width, max_width)
    cols = len(labels[0])
    room = max_width - (cols + 1)  # the borders take one column each, and one more
    natural = [max(_measure(t, p, room) for t, p in zip(
        [row[j] for row in labels], [row[j] for row in pads], strict=True)) for j in range(cols)]
    widths = _fit(natural, room)
    lines = ["┌" + "┬".join("─" * w for w in widths) + "┐"]
    for i, (row_labels, row_pads) in enumerate(zip(labels, pads, strict=True)):
        cells = [_render_cell(t, p, w) for t, p, w in zip(row_labels, row_pads, widths,
                                                          strict=True)]
        height = max(len(c) for c in cells)
        cells = [c + [" " * w] * (height - len(c)) for c, w in zip(cells, widths, strict=True)]
        lines += ["│" + "│".join(c[k] for c in cells) + "│" for k in range(height)]
        if i + 1 < len(labels):
            lines.append("├" + "┼".join("─" * w for w in widths) + "┤")
    lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "\n".join(lines) + "\n"


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, use_color: bool = True,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       color_map: Any = None) -> None:
    """Prints which device holds which block of an array of `shape` laid out by `sharding`.

    Unlike JAX: always the plain box drawing (JAX draws it when its output is not a colour
    terminal); use_color and color_map are accepted and ignored.

    >>> import numbax
    >>> visualize_sharding((4,), numbax.sharding.SingleDeviceSharding(numbax.devices()[0]))
    ┌───────┐
    │ CPU 0 │
    └───────┘
    """
    if not isinstance(sharding, Sharding):
        raise NumbaxTypeError(f"visualize_sharding: sharding is a {type(sharding).__name__}, "
                              "expected a jax.sharding.Sharding.")
    print(draw(shape, sharding, scale=scale, min_width=min_width, max_width=max_width), end="")


def _sharding(x: Any) -> Sharding:
    found = sharding_of(x)
    if found is not None:
        return found
    sharding = getattr(x, "sharding", None)
    if isinstance(sharding, Sharding):
        return sharding
    raise NumbaxTypeError(f"visualize_array_sharding: got a {type(x).__name__}, expected a "
                          "numbax Array (np.asarray data has no sharding: device_put it).")


def inspect_array_sharding(value: Any, *, callback: Callable[[Sharding], None]) -> None:
    """Calls `callback` with the sharding of each array in `value`.

    Unlike JAX: under jit the callback runs at trace time, and only for values whose type
    carries a sharding (explicit mesh axes); JAX calls it once XLA has chosen the layout."""

    def inspect(leaf: Any) -> None:
        if isinstance(leaf, core.Tracer):
            if leaf.aval._sharding is not None:
                callback(leaf.aval._sharding)
            return
        callback(_sharding(leaf))

    for leaf in tu.tree_leaves(value):
        inspect(leaf)


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """Prints which device holds which block of `arr` (see visualize_sharding)."""
    inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s, **kwargs))

