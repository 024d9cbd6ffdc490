"""The fuzzer's derivative oracles: grad, jvp and vmap(grad) of a program with respect to all
its float64 inputs, against central finite differences of its numpy reference (float64, along a
random direction), and their compiled forms against the eager ones."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from tests.fuzz.oracles import Mismatch, _reference, _run, compare
from tests.fuzz.programs import Program, numbax_function

STEP = 1e-6


def _weights(shape: tuple, k: int) -> np.ndarray:
    """Fixed weights of output k in the loss (a permutation or sign error shows)."""
    size = int(np.prod(shape, dtype=np.int64))
    return np.cos(np.arange(size, dtype=np.float64) * 0.7 + k).reshape(shape)


def _loose(want: np.ndarray) -> np.ndarray:
    """The tolerance of a compiled derivative against the eager one: reordered sums in the
    transposed program, relative to the largest entry (no noisy reference to propagate)."""
    want = np.asarray(want, np.float64)
    finite = np.abs(want[np.isfinite(want)])
    return 1e-11 * (np.abs(np.nan_to_num(want)) + (finite.max() if finite.size else 1.0))


def _diff_inputs(program: Program) -> tuple[int, ...]:
    return tuple(k for k, x in enumerate(program.inputs)
                 if x.fill == "smooth" and x.dtype == "float64")


def _loss(program: Program, shapes: list[tuple]):
    f = numbax_function(program)
    ws = [_weights(s, k) for k, s in enumerate(shapes)]

    def loss(*args):
        return sum(jnp.sum(o * w) for o, w in zip(f(*args), ws, strict=True))

    return loss


def _loss_reference(program: Program, args: list, shapes: list[tuple]) -> float:
    _, outs = _reference(program, args)
    return float(sum(np.sum(o * _weights(s, k))
                     for k, (o, s) in enumerate(zip(outs, shapes, strict=True))))


def _shifted(args: list, diff: tuple, vs: list, step: float) -> list:
    out = list(args)
    for k, v in zip(diff, vs, strict=True):
        out[k] = np.asarray(args[k], np.float64) + step * v
    return out


def _fd_mismatch(label: str, slope: float, fd: float, spread: float, level: float):
    """Central differences carry O(h^2) truncation and O(eps |L| / h) rounding errors."""
    tol = 1e-5 * (abs(slope) + abs(fd) + spread) + 1e-8 * (abs(level) + 1.0)
    if not np.isfinite(level) or (np.isnan(slope) and np.isnan(fd)):
        return None  # no finite value to differentiate (a mean over nothing is nan)
    if not abs(slope - fd) <= tol:
        return Mismatch(label, f"derivative {slope!r} vs finite difference {fd!r} (tol {tol:.3g})")
    return None


def check_derivatives(program: Program) -> list[Mismatch]:
    args = [x.build() for x in program.inputs]
    _, outs = _reference(program, args)
    shapes = [o.shape for o in outs]
    diff = _diff_inputs(program)
    rng = np.random.default_rng(program.inputs[0].seed + 7)
    vs = [rng.uniform(-1.0, 1.0, np.shape(args[k])) for k in diff]
    plus, minus = _shifted(args, diff, vs, STEP), _shifted(args, diff, vs, -STEP)
    found: list[Mismatch] = []
    if program.transform == "vmap_grad":
        return _check_vmap_grad(program, args, shapes, diff)
    if program.transform == "grad":
        grad = numbax.grad(_loss(program, shapes), argnums=diff)
        g = _run("grad-raised", grad, args, found)
        if g is None:
            return found
        fd = (_loss_reference(program, plus, shapes) -
              _loss_reference(program, minus, shapes)) / (2 * STEP)
        slope = float(sum(np.sum(gk * v) for gk, v in zip(g, vs, strict=True)))
        spread = float(sum(np.sum(np.abs(gk * v)) for gk, v in zip(g, vs, strict=True)))
        m = _fd_mismatch("grad-vs-fd", slope, fd, spread, _loss_reference(program, args,
                                                                            shapes))
        found.extend([m] if m else [])
        jg = _run("jit-raised", numbax.jit(grad), args, found)
        if jg is not None:
            for k, (a, b) in enumerate(zip(jg, g, strict=True)):
                err = compare(a, b, _loose(b))
                found.extend([Mismatch("jit-vs-eager", f"grad {k}: {err}")] if err else [])
        return found
    f = numbax_function(program)

    def tangents(*a):
        def of_diff(*d):
            full = list(a)
            for k, x in zip(diff, d, strict=True):
                full[k] = x
            return f(*full)
        return numbax.jvp(of_diff, tuple(a[k] for k in diff), tuple(vs))[1]

    t = _run("jvp-raised", tangents, args, found)
    if t is None:
        return found
    _, up = _reference(program, plus)
    _, down = _reference(program, minus)
    for k, (tk, u, d, o) in enumerate(zip(t, up, down, outs, strict=True)):
        fd = (u - d) / (2 * STEP)
        for i in np.ndindex(tk.shape):
            m = _fd_mismatch("jvp-vs-fd", float(tk[i]), float(fd[i]), 0.0, float(o[i]))
            if m:
                found.append(Mismatch(m.oracle, f"output {k} at {i}: {m.detail}"))
                break
    jt = _run("jit-raised", numbax.jit(tangents), args, found)
    if jt is not None:
        for k, (a, b) in enumerate(zip(jt, t, strict=True)):
            err = compare(a, b, _loose(b))
            found.extend([Mismatch("jit-vs-eager", f"jvp output {k}: {err}")] if err else [])
    return found


def _check_vmap_grad(program: Program, args: list, shapes: list,
                     diff: tuple) -> list[Mismatch]:
    found: list[Mismatch] = []
    in_axes = program.in_axes
    batched = [x.build(program.batch) if ax == 0 else a
               for x, a, ax in zip(program.inputs, args, in_axes, strict=True)]
    grad = numbax.grad(_loss(program, shapes), argnums=diff)
    mapped = _run("jit-raised", numbax.jit(numbax.vmap(grad, in_axes=in_axes)), batched, found)
    if mapped is None:
        return found
    rows = []
    for b in range(program.batch):
        row = [a[b] if ax == 0 else a for a, ax in zip(batched, in_axes, strict=True)]
        rows.append([np.asarray(x) for x in grad(*row)])
    for k in range(len(diff)):
        want = np.stack([r[k] for r in rows])
        err = compare(mapped[k], want, _loose(want))
        found.extend([Mismatch("vmap-vs-loop", f"vmap(grad) {k}: {err}")] if err else [])
    return found
