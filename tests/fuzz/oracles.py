"""The fuzzer's oracles: what each program is checked against, and how closely.

- eager numbax == the numpy reference (oracle "eager-vs-numpy")
- jit == eager, bit for bit when no inexact op (ops.py) fed the output, else within a
  tolerance ("jit-vs-eager"; "jit-raised" when only the compiled call fails)
- vmap == a Python loop over the batch, and jit(vmap) == vmap ("vmap-vs-loop", "jit-vs-eager")
- grad and jvp == central finite differences in float64 along a random direction, and their
  jit == eager ("grad-vs-fd", "jvp-vs-fd")
- (CUDA simulator) jit(backend="gpu") == jit on the CPU ("gpu-vs-cpu")

Tolerances: `ulps` machine epsilons of the output dtype per inexact op on the way (a
transcendental function may differ by a few ulps between numpy and numbax's fast math; a sum
or product is reordered), relative, plus the same fraction of the largest magnitude among the
program's values (cancellation), and NaN where the other side has NaN. Documented in
docs/sharp_bits.md ("Results you can check")."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

import numbax
import numbax.numpy as jnp
from tests.fuzz.ops import OPS
from tests.fuzz.programs import CONTROL, Program, numbax_function, reference_values

ULPS_PER_INEXACT_OP = 64


@dataclass
class Mismatch:
    oracle: str
    detail: str

    def __str__(self) -> str:
        return f"{self.oracle}: {self.detail}"


class Skip(Exception):  # noqa: N818 - not an error: the program is outside what numpy defines
    """The numpy reference refuses the program (an invalid combination): nothing to check."""


def inexact_count(program: Program, values: list[np.ndarray]) -> list[int]:
    """Per value, how many inexact ops (ops.py `inexact`, reductions included) it depends on;
    control-flow bodies count each inexact op once per trip."""
    counts = [0] * len(program.inputs)
    for node in program.nodes:
        n = max((counts[i] for i in node.args), default=0)
        if node.op in CONTROL:
            kind = values[node.args[-1]].dtype.kind
            per_trip = sum(kind in OPS[b.op].inexact for body in node.bodies for b in body)
            p = dict(node.params)
            if node.op == "scan":
                trips = len(values[node.args[-1]])
            elif node.op == "while":
                trips = 3
            else:
                trips = p.get("hi", 1) - p.get("lo", 0)
            n += per_trip * max(trips, 1)
        elif any(values[i].dtype.kind in OPS[node.op].inexact for i in node.args):
            n += 1
        counts.append(n)
    return counts


def _scale(values: list[np.ndarray]) -> float:
    """The largest finite magnitude among the program's float values (times the largest size,
    for sums), the reference for absolute tolerances."""
    big = 0.0
    size = 1
    for v in values:
        if v.dtype.kind in "fc" and v.size:
            finite = np.abs(v[np.isfinite(v)]) if v.dtype.kind == "f" else np.abs(
                v[np.isfinite(v.real) & np.isfinite(v.imag)])
            if finite.size:
                big = max(big, float(finite.max()))
        size = max(size, v.size)
    return min(big * size, 1e300)


def compare(got: Any, want: Any, n_inexact: int, scale: float) -> str | None:
    """None when `got` matches `want`, else what differs. Exact (`n_inexact` 0): same dtype,
    shape and bits, NaNs anywhere as NaN; otherwise within the tolerance above."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    if got.dtype.kind == "c":
        for part in ("real", "imag"):
            err = compare(getattr(got, part), getattr(want, part), n_inexact, scale)
            if err:
                return f"{part} part: {err}"
        return None
    if got.dtype.kind != "f":
        return None if np.array_equal(got, want) else _show(got, want, got != want)
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    if n_inexact == 0:
        bad = (nan_g != nan_w) | (~nan_w & (got.view(_uint(got)) != want.view(_uint(want))))
        return _show(got, want, bad) if bad.any() else None
    rtol = float(np.finfo(got.dtype).eps) * ULPS_PER_INEXACT_OP * n_inexact
    finite = np.isfinite(got) & np.isfinite(want)
    with np.errstate(all="ignore"):
        wide_g, wide_w = got.astype(np.float64), want.astype(np.float64)
        close = np.abs(wide_g - wide_w) <= rtol * (np.abs(wide_w) + scale)
        # near overflow one side may round to inf
        huge = float(np.finfo(got.dtype).max) / 16
        overflow = (np.isinf(got) & (np.abs(wide_w) > huge)) | (
            np.isinf(want) & (np.abs(wide_g) > huge))
    same_inf = np.isinf(got) & (got == want)
    bad = (nan_g != nan_w) | ~(nan_w | same_inf | overflow | (finite & close))
    return _show(got, want, bad) if bad.any() else None


def _uint(a: np.ndarray) -> np.dtype:
    return np.dtype(f"uint{a.dtype.itemsize * 8}")


def _show(got: np.ndarray, want: np.ndarray, bad: np.ndarray) -> str:
    idx = np.argwhere(np.atleast_1d(bad))[:3]
    g, w = np.atleast_1d(got), np.atleast_1d(want)
    pairs = ", ".join(f"at {tuple(int(k) for k in i)}: {g[tuple(i)]!r} vs {w[tuple(i)]!r}"
                      for i in idx)
    return f"{int(np.sum(bad))} of {got.size} differ ({pairs})"


def _outputs(fn, args) -> list[np.ndarray]:
    return [np.asarray(o) for o in fn(*args)]


def _args(program: Program, batch: int = 0) -> list:
    return [x.build(batch if batch and (not program.in_axes or program.in_axes[k] == 0) else 0)
            for k, x in enumerate(program.inputs)]


def check(program: Program, backend: str | None = None) -> list[Mismatch]:
    """Runs every oracle of `program`'s transform; the mismatches found (raises Skip when the
    numpy reference refuses the program)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if program.transform in ("grad", "jvp", "vmap_grad"):
            from tests.fuzz.derivatives import check_derivatives

            return check_derivatives(program)
        if program.transform == "vmap":
            return _check_vmap(program)
        return _check_jit(program, backend)


def _reference(program: Program, args: list) -> tuple[list[np.ndarray], list[np.ndarray]]:
    try:
        values = reference_values(program, args)
    except Exception as err:  # noqa: BLE001 - numpy refuses: not a program to check
        raise Skip(f"numpy: {type(err).__name__}: {err}") from None
    return values, [values[i] for i in program.outputs]


def _run(label: str, fn, args, found: list[Mismatch]) -> list[np.ndarray] | None:
    try:
        return _outputs(fn, args)
    except Exception as err:  # noqa: BLE001 - reported as a mismatch
        found.append(Mismatch(label, f"{type(err).__name__}: {str(err)[:300]}"))
        return None


def _compare_all(label: str, got, want, counts, scale, found: list[Mismatch]) -> None:
    for k, (g, w, n) in enumerate(zip(got, want, counts, strict=True)):
        err = compare(g, w, n, scale)
        if err:
            found.append(Mismatch(label, f"output {k}: {err}"))


def _check_jit(program: Program, backend: str | None) -> list[Mismatch]:
    args = _args(program)
    values, want = _reference(program, args)
    counts = inexact_count(program, values)
    out_counts = [counts[i] for i in program.outputs]
    scale = _scale(values)
    f = numbax_function(program)
    found: list[Mismatch] = []
    eager = _run("eager-raised", f, args, found)
    if eager is None:
        return found
    _compare_all("eager-vs-numpy", eager, want, out_counts, scale, found)
    if backend == "gpu":
        cpu = _run("jit-raised", numbax.jit(f), args, found)
        gpu = _run("gpu-raised", numbax.jit(f, backend="gpu"), args, found)
        if cpu is not None and gpu is not None:
            _compare_all("gpu-vs-cpu", gpu, cpu, out_counts, scale, found)
        return found
    compiled = _run("jit-raised", numbax.jit(f), args, found)
    if compiled is not None:
        _compare_all("jit-vs-eager", compiled, eager, out_counts, scale, found)
    return found


def _check_vmap(program: Program) -> list[Mismatch]:
    args = _args(program, program.batch)
    in_axes = program.in_axes
    rows = []
    for b in range(program.batch):
        row = [a[b] if ax == 0 else a for a, ax in zip(args, in_axes, strict=True)]
        rows.append(_reference(program, row))
    values = [v for r in rows for v in r[0]]
    counts = inexact_count(program, rows[0][0]) if rows else [0] * 99
    out_counts = [counts[i] for i in program.outputs]
    scale = _scale(values)
    f = numbax_function(program)
    found: list[Mismatch] = []
    mapped = _run("vmap-raised", numbax.vmap(f, in_axes=in_axes), args, found)
    if mapped is None:
        return found
    loop = [[np.asarray(o) for o in f(*[jnp.asarray(a[b]) if ax == 0 else a
                                         for a, ax in zip(args, in_axes, strict=True)])]
            for b in range(program.batch)]
    stacked = [np.stack([r[k] for r in loop]) for k in range(len(program.outputs))]
    _compare_all("vmap-vs-loop", mapped, stacked, out_counts, scale, found)
    ref = [np.stack([r[1][k] for r in rows]) for k in range(len(program.outputs))]
    _compare_all("eager-vs-numpy", stacked, ref, out_counts, scale, found)
    compiled = _run("jit-raised", numbax.jit(numbax.vmap(f, in_axes=in_axes)), args, found)
    if compiled is not None:
        _compare_all("jit-vs-eager", compiled, mapped, out_counts, scale, found)
    return found
