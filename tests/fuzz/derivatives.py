"""The fuzzer's derivative oracles: grad, jvp and vmap(grad) of a program against central
finite differences of its numpy reference (float64, along a random direction), and their
compiled forms against the eager ones."""
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


def _loss_numbax(program: Program, shapes: list[tuple]):
    f = numbax_function(program)
    ws = [_weights(s, k) for k, s in enumerate(shapes)]

    def loss(x0, *rest):
        return sum(jnp.sum(o * w) for o, w in zip(f(x0, *rest), ws, strict=True))

    return loss


def _loss_reference(program: Program, args: list, shapes: list[tuple]) -> float:
    _, outs = _reference(program, args)
    return float(sum(np.sum(o * _weights(s, k))
                     for k, (o, s) in enumerate(zip(outs, shapes, strict=True))))


def _direction(program: Program, shape: tuple) -> np.ndarray:
    return np.random.default_rng(program.inputs[0].seed + 7).uniform(-1.0, 1.0, shape)


def _fd_mismatch(label: str, slope: float, fd: float, spread: float, level: float):
    """Central differences carry O(h^2) truncation and O(eps |L| / h) rounding errors."""
    tol = 1e-5 * (abs(slope) + abs(fd) + spread) + 1e-8 * (abs(level) + 1.0)
    if np.isnan(slope) and np.isnan(fd):
        return None
    if not abs(slope - fd) <= tol:
        return Mismatch(label, f"derivative {slope!r} vs finite difference {fd!r} (tol {tol:.3g})")
    return None


def check_derivatives(program: Program) -> list[Mismatch]:
    args = [x.build() for x in program.inputs]
    values, outs = _reference(program, args)
    shapes = [o.shape for o in outs]
    x0 = np.asarray(args[0], np.float64)
    v = _direction(program, x0.shape)
    found: list[Mismatch] = []
    plus = [x0 + STEP * v, *args[1:]]
    minus = [x0 - STEP * v, *args[1:]]
    n_ops = 4 * (len(program.nodes) + 1)
    if program.transform == "grad":
        loss = _loss_numbax(program, shapes)
        g = _run("grad-raised", lambda *a: [numbax.grad(loss)(*a)], args, found)
        if g is None:
            return found
        fd = (_loss_reference(program, plus, shapes) -
              _loss_reference(program, minus, shapes)) / (2 * STEP)
        level = _loss_reference(program, args, shapes)
        m = _fd_mismatch("grad-vs-fd", float(np.sum(g[0] * v)), fd,
                         float(np.sum(np.abs(g[0] * v))), level)
        found.extend([m] if m else [])
        jg = _run("jit-raised", lambda *a: [numbax.jit(numbax.grad(loss))(*a)], args, found)
        if jg is not None:
            err = compare(jg[0], g[0], n_ops, float(np.max(np.abs(g[0]), initial=1.0)))
            found.extend([Mismatch("jit-vs-eager", f"grad: {err}")] if err else [])
        return found
    if program.transform == "jvp":
        f = numbax_function(program)

        def tangents(*a):
            return numbax.jvp(lambda x: f(x, *a[1:]), (a[0],), (v,))[1]

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
                err = compare(a, b, n_ops, float(np.max(np.abs(b), initial=1.0)))
                found.extend([Mismatch("jit-vs-eager", f"jvp output {k}: {err}")] if err else [])
        return found
    return _check_vmap_grad(program, args, shapes, found, n_ops)


def _check_vmap_grad(program: Program, args: list, shapes: list, found: list,
                     n_ops: int) -> list[Mismatch]:
    in_axes = program.in_axes
    batched = [x.build(program.batch) if ax == 0 else a
               for x, a, ax in zip(program.inputs, args, in_axes, strict=True)]
    loss = _loss_numbax(program, shapes)
    mapped = _run("jit-raised", lambda *a: [numbax.jit(numbax.vmap(numbax.grad(loss),
                                                                   in_axes=in_axes))(*a)],
                  batched, found)
    if mapped is None:
        return found
    rows = []
    for b in range(program.batch):
        row = [a[b] if ax == 0 else a for a, ax in zip(batched, in_axes, strict=True)]
        rows.append(np.asarray(numbax.grad(loss)(*row)))
    want = np.stack(rows)
    err = compare(mapped[0], want, n_ops, float(np.max(np.abs(want), initial=1.0)))
    found.extend([Mismatch("vmap-vs-loop", f"vmap(grad): {err}")] if err else [])
    return found
