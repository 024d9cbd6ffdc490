"""The fuzzer's oracles: what each program is checked against, and how closely.

- eager numbax == the numpy reference (oracle "eager-vs-numpy")
- jit == eager, bit for bit when no inexact op (ops.py) fed the output, else within a
  tolerance ("jit-vs-eager"; "jit-raised" when only the compiled call fails); the second
  compiled call (jit's fast path) == the first, bit for bit ("jit-second-call")
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


NOISY_RUNS = 3


def spreads(program: Program, args: list, exact: list[np.ndarray]) -> list[np.ndarray | None]:
    """Per output, how far the reference moves when every inexact op carries a random rounding
    error of a few ulps (programs.NOISE_ULPS): the tolerance of that output, propagated through
    the program with its own conditioning. None for an output no inexact op fed (exact); inf
    where a noisy run turns a value non-finite or finite (an unstable spot, not checked)."""
    counts = inexact_count(program, reference_values(program, args))
    runs = [reference_values(program, args, noise=seed) for seed in range(1, NOISY_RUNS + 1)]
    out = []
    for k, i in enumerate(program.outputs):
        if counts[i] == 0 or exact[k].dtype.kind not in "fc":
            out.append(None)
            continue
        want = exact[k]
        real = np.zeros(want.shape)
        imag = np.zeros(want.shape)
        for run in runs:
            real = np.maximum(real, _deviation(run[i].real, want.real))
            if want.dtype.kind == "c":
                imag = np.maximum(imag, _deviation(run[i].imag, want.imag))
        out.append(real + 1j * imag if want.dtype.kind == "c" else real)
    return out


def _deviation(noisy: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|noisy - exact|, inf where one is finite and the other not, 0 where both are the same
    non-finite value."""
    noisy, exact = noisy.astype(np.float64), exact.astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.abs(noisy - exact)
    same = (noisy == exact) | (np.isnan(noisy) & np.isnan(exact))
    d = np.where(same, 0.0, d)
    return np.where(np.isfinite(noisy) != np.isfinite(exact), np.inf, np.nan_to_num(d, nan=0.0))


def compare(got: Any, want: Any, spread: np.ndarray | None) -> str | None:
    """None when `got` matches `want`, else what differs. Exact (`spread` None): same dtype,
    shape and bits (any NaN for a NaN); otherwise within 4 * spread + 16 ulps of `want` (plus
    the smallest normal number, for products and sums that underflow at another width)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    if got.dtype.kind == "c":
        if spread is not None:
            # Where a complex product or quotient overflows, C99 leaves the parts to the
            # implementation: numpy's FMA loop gives -inf+infj where compiled code gives
            # nan+infj (docs/sharp_bits.md). Both must be non-finite; the parts may differ.
            fin_g = np.isfinite(got.real) & np.isfinite(got.imag)
            fin_w = np.isfinite(want.real) & np.isfinite(want.imag)
            if (fin_g != fin_w).any():
                return _show(got, want, fin_g != fin_w)
            got = np.where(fin_g, got, want)
        for part in ("real", "imag"):
            s = None if spread is None else getattr(np.asarray(spread), part)
            err = compare(getattr(got, part), getattr(want, part), s)
            if err:
                return f"{part} part: {err}"
        return None
    if got.dtype.kind != "f":
        return None if np.array_equal(got, want) else _show(got, want, got != want)
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    if spread is None:
        bad = (nan_g != nan_w) | (~nan_w & (got.view(_uint(got)) != want.view(_uint(want))))
        return _show(got, want, bad) if bad.any() else None
    spread = np.broadcast_to(np.asarray(spread, np.float64), got.shape)
    unstable = np.isinf(spread)
    fi = np.finfo(got.dtype)
    with np.errstate(all="ignore"):
        wide_g, wide_w = got.astype(np.float64), want.astype(np.float64)
        # + the smallest normal: an accumulator of another width underflows elsewhere
        close = np.abs(wide_g - wide_w) <= (4 * spread + 16 * float(fi.eps) * np.abs(wide_w)
                                            + float(fi.tiny))
    same = (nan_g & nan_w) | (got == want) | (np.isfinite(got) & np.isfinite(want) & close)
    bad = ~(same | unstable)
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


def _compare_all(label: str, got, want, tols, found: list[Mismatch]) -> None:
    for k, (g, w, t) in enumerate(zip(got, want, tols, strict=True)):
        err = compare(g, w, t)
        if err:
            found.append(Mismatch(label, f"output {k}: {err}"))


def _check_jit(program: Program, backend: str | None) -> list[Mismatch]:
    args = _args(program)
    _, want = _reference(program, args)
    tols = spreads(program, args, want)
    f = numbax_function(program)
    found: list[Mismatch] = []
    eager = _run("eager-raised", f, args, found)
    if eager is None:
        return found
    _compare_all("eager-vs-numpy", eager, want, tols, found)
    if backend == "gpu":
        cpu = _run("jit-raised", numbax.jit(f), args, found)
        gpu = _run("gpu-raised", numbax.jit(f, backend="gpu"), args, found)
        if found and found[-1].oracle == "gpu-raised" and _simulator_math(found[-1].detail):
            raise Skip("the CUDA simulator runs math.* in Python, which raises where a GPU "
                       "returns inf or nan")
        if cpu is not None and gpu is not None:
            _compare_all("gpu-vs-cpu", gpu, cpu, tols, found)
        return found
    jitted = numbax.jit(f)
    compiled = _run("jit-raised", jitted, args, found)
    if compiled is not None:
        _compare_all("jit-vs-eager", compiled, eager, tols, found)
        # the second call takes jit's fast path for numpy arguments: the same bits
        again = _run("jit-raised", jitted, args, found)
        if again is not None:
            _compare_all("jit-second-call", again, compiled, [None] * len(again), found)
    return found


def _simulator_math(detail: str) -> bool:
    from numbax._src.compiler.cuda.runtime import memory

    return memory.simulator_enabled() and any(
        text in detail for text in ("math domain error", "math range error",
                                    "ZeroDivisionError", "OverflowError",
                                    "cannot convert float"))


def _check_vmap(program: Program) -> list[Mismatch]:
    args = _args(program, program.batch)
    in_axes = program.in_axes
    rows, row_tols = [], []
    for b in range(program.batch):
        row = [a[b] if ax == 0 else a for a, ax in zip(args, in_axes, strict=True)]
        rows.append(_reference(program, row))
        row_tols.append(spreads(program, row, rows[-1][1]))
    tols = [None if row_tols[0][k] is None else np.stack([t[k] for t in row_tols])
            for k in range(len(program.outputs))]
    f = numbax_function(program)
    found: list[Mismatch] = []
    mapped = _run("vmap-raised", numbax.vmap(f, in_axes=in_axes), args, found)
    if mapped is None:
        return found
    loop = [[np.asarray(o) for o in f(*[jnp.asarray(a[b]) if ax == 0 else a
                                         for a, ax in zip(args, in_axes, strict=True)])]
            for b in range(program.batch)]
    stacked = [np.stack([r[k] for r in loop]) for k in range(len(program.outputs))]
    _compare_all("vmap-vs-loop", mapped, stacked, tols, found)
    ref = [np.stack([r[1][k] for r in rows]) for k in range(len(program.outputs))]
    _compare_all("eager-vs-numpy", stacked, ref, tols, found)
    compiled = _run("jit-raised", numbax.jit(numbax.vmap(f, in_axes=in_axes)), args, found)
    if compiled is not None:
        _compare_all("jit-vs-eager", compiled, mapped, tols, found)
    return found
