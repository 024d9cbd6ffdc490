"""Fuzzer programs as plain data, their two interpreters (numbax and the numpy reference) and a
readable listing.

A program is a list of nodes over a growing list of values, which starts with its inputs. A
node applies an op of ops.py to earlier values, or runs control flow (cond, switch, while_loop,
scan, fori_loop) whose bodies are node lists of their own over a local list of values. Every
field is a tuple, str, int, float or bool, so `repr(program)` is Python that rebuilds it:
that is the reproducer the soak prints."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import numbax.numpy as jnp
from numbax import lax
from tests.fuzz.ops import OPS

CONTROL = ("cond", "switch", "while", "scan", "fori")
WHILE_LIMIT = 3  # trip counts of generated while loops are clipped to this


def _special(dtype: np.dtype) -> list:
    if dtype.kind == "f":
        fi = np.finfo(dtype)
        return [0.0, -0.0, np.inf, -np.inf, np.nan, float(fi.smallest_subnormal),
                -float(fi.smallest_subnormal), float(fi.tiny), float(fi.max), -float(fi.max),
                1.0, -1.0, 0.5]
    if dtype.kind in "iu":
        ii = np.iinfo(dtype)
        return [ii.min, ii.max, 0, 1, ii.max - 1, ii.min + 1, 2, -1 if dtype.kind == "i" else 3]
    return [True, False]


@dataclass(frozen=True)
class Input:
    shape: tuple
    dtype: str
    fill: str  # "normal", "special", "smooth" (gradient programs), "index" (small ints)
    layout: str  # "C", "F", "strided", "reversed", "readonly", "array"
    seed: int

    def data(self, batch: int = 0) -> np.ndarray:
        """The values, C-contiguous, with a leading batch axis when batch > 0."""
        shape = (batch, *self.shape) if batch else self.shape
        dtype = np.dtype(self.dtype)
        rng = np.random.default_rng(self.seed)
        if dtype.kind == "c":
            part = np.dtype(f"float{dtype.itemsize * 4}")
            re = Input(self.shape, part.name, self.fill, "C", self.seed).data(batch)
            im = Input(self.shape, part.name, self.fill, "C", self.seed + 1).data(batch)
            return np.array(re + 1j * im, dtype)
        if dtype.kind == "b":
            return np.array(rng.random(shape) < 0.5)
        if self.fill == "index":
            return np.array(rng.integers(-1, 4, shape), dtype)
        if dtype.kind in "iu":
            lo = 0 if dtype.kind == "u" else -5
            out = rng.integers(lo, 6, shape).astype(dtype)
        elif self.fill == "smooth":
            out = rng.uniform(-1.0, 1.0, shape).astype(dtype)
        else:
            out = (rng.normal(size=shape) * 2.0).astype(dtype)
        out = np.array(out, dtype)
        if self.fill == "special" and out.size:
            mask = rng.random(shape) < 0.4
            specials = np.array(_special(dtype), dtype=dtype)
            out[mask] = specials[rng.integers(0, len(specials), int(mask.sum()))]
        return out

    def build(self, batch: int = 0) -> Any:
        """The input as the program receives it, in its layout (a numbax Array for "array")."""
        x = np.array(self.data(batch))  # an ndarray even when 0-d
        if self.layout == "F" and x.ndim:
            return np.asfortranarray(x)
        if self.layout == "strided" and x.ndim:
            wide = np.zeros((*x.shape[:-1], 2 * x.shape[-1]), x.dtype)
            wide[..., ::2] = x
            return wide[..., ::2]
        if self.layout == "reversed" and x.ndim:
            flipped = np.ascontiguousarray(x[(slice(None, None, -1),) * x.ndim])
            return flipped[(slice(None, None, -1),) * x.ndim]
        if self.layout == "readonly":
            x.flags.writeable = False
            return x
        if self.layout == "array":
            return jnp.asarray(x)
        return x


@dataclass(frozen=True)
class Node:
    op: str
    args: tuple  # indices of the values it reads
    params: tuple = ()  # sorted (name, value) pairs
    bodies: tuple = ()  # control flow: one node tuple per branch / loop body

    def describe(self, names: list[str], indent: str = "") -> list[str]:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params)
        head = f"{self.op}({', '.join(names[i] for i in self.args)}{', ' if p else ''}{p})"
        lines = [head]
        for k, body in enumerate(self.bodies):
            lines.append(f"{indent}  body {k}:")
            local = [f"b{j}" for j in range(2 if self.op == "scan" else 1)]
            for node in body:
                sub = node.describe(local, indent + "    ")
                lines.append(f"{indent}    b{len(local)} = {sub[0]}")
                lines.extend(sub[1:])
                local.append(f"b{len(local)}")
        return lines


@dataclass(frozen=True)
class Program:
    inputs: tuple  # Input per argument
    nodes: tuple  # Node per value after the inputs
    outputs: tuple  # indices of the values returned
    transform: str = "jit"  # "jit", "vmap", "grad", "jvp", "vmap_grad"
    batch: int = 0  # vmap: the batch size
    in_axes: tuple = ()  # vmap: 0 or None per input

    def listing(self) -> str:
        names = [f"v{i}" for i in range(len(self.inputs))]
        lines = [f"v{i} = input {x.dtype}{list(x.shape)} {x.fill} {x.layout}"
                 for i, x in enumerate(self.inputs)]
        for node in self.nodes:
            text = node.describe(names)
            lines.append(f"v{len(names)} = {text[0]}")
            lines.extend(text[1:])
            names.append(f"v{len(names)}")
        lines.append(f"return {', '.join(names[i] for i in self.outputs)}  # {self.transform}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- interpreters


NOISE_ULPS = 8  # the rounding noise of one inexact op, in units of its dtype's epsilon


def _apply(node: Node, env: list, mode: str, noise: np.random.Generator | None = None) -> Any:
    if node.op in CONTROL:
        if mode == "nbx":
            return _control_nbx(node, env)
        return _control_ref(node, env, noise)
    spec = OPS[node.op]
    fn = spec.nbx if mode == "nbx" else spec.ref
    p = dict(node.params)
    args = [env[i] for i in node.args]
    out = fn(p, *args)
    if noise is not None and any(np.asarray(a).dtype.kind in spec.inexact for a in args):
        out = _perturb(spec, p, args, np.asarray(out), noise)
    return out


def _perturb(spec, p: dict, args: list, out: np.ndarray, noise: np.random.Generator):
    """`out` with a random rounding error of NOISE_ULPS epsilons: relative to the value, or for
    sums (reductions, products of matrices) relative to the same op on the magnitudes of its
    operands, which bounds a reordered sum's error."""
    if out.dtype.kind not in "fc" or out.dtype == np.float16:  # float16 runs eagerly
        return out
    eps = float(np.finfo(out.dtype).eps) * NOISE_ULPS
    mag = np.abs(out)
    if spec.sums:  # (integers' magnitudes as floats: |int64 min| does not fit in an int64)
        with np.errstate(all="ignore"):
            mag = np.abs(np.asarray(spec.ref(p, *[np.abs(_as_inexact(a)) for a in args])))
    shake = noise.uniform(-1.0, 1.0, out.shape)
    if out.dtype.kind == "c":
        shake = shake + 1j * noise.uniform(-1.0, 1.0, out.shape)
    with np.errstate(all="ignore"):
        return np.asarray(out + eps * shake * mag).astype(out.dtype)


def _as_inexact(a) -> np.ndarray:
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind in "biu" else a


def run_body(body: tuple, local: list, mode: str,
             noise: np.random.Generator | None = None) -> Any:
    local = list(local)
    for node in body:
        local.append(_apply(node, local, mode, noise))
    return local[-1]


def run_nodes(nodes: tuple, env: list, mode: str,
              noise: np.random.Generator | None = None) -> list:
    """The values of the program: `env` (its inputs) extended by each node's value; with
    `noise`, the reference's inexact results are perturbed (oracles.py's tolerances)."""
    env = list(env)
    for node in nodes:
        env.append(_apply(node, env, mode, noise))
    return env


def _branch(body: tuple):
    return lambda v: run_body(body, [v], "nbx")


def _control_nbx(node: Node, env: list) -> Any:
    p = dict(node.params)
    args = [env[i] for i in node.args]
    bodies = node.bodies
    if node.op == "cond":
        pred, x = args
        return lax.cond(pred, lambda v: run_body(bodies[0], [v], "nbx"),
                        lambda v: run_body(bodies[1], [v], "nbx"), x)
    if node.op == "switch":
        index, x = args
        return lax.switch(index, [_branch(b) for b in bodies], x)
    if node.op == "while":
        n, x = args

        def cond(c):
            return (c[0] < n) & (c[0] < WHILE_LIMIT)

        return lax.while_loop(cond, lambda c: (c[0] + 1, run_body(bodies[0], [c[1]], "nbx")),
                              (0, x))[1]
    if node.op == "scan":
        c0, xs = args

        def step(c, x):
            new = run_body(bodies[0], [c, x], "nbx")
            return new, new

        carry, ys = lax.scan(step, c0, xs, reverse=p["reverse"])
        return ys if p["out"] == "ys" else carry
    (x,) = args
    return lax.fori_loop(p["lo"], p["hi"], lambda i, c: run_body(bodies[0], [c], "nbx"), x)


def _control_ref(node: Node, env: list, noise: np.random.Generator | None) -> Any:
    p = dict(node.params)
    args = [env[i] for i in node.args]
    bodies = node.bodies
    if node.op == "cond":
        pred, x = args
        return run_body(bodies[0] if pred else bodies[1], [x], "ref", noise)
    if node.op == "switch":
        index, x = args
        return run_body(bodies[int(np.clip(index, 0, len(bodies) - 1))], [x], "ref", noise)
    if node.op == "while":
        n, x = args
        k = 0
        while k < n and k < WHILE_LIMIT:
            x = run_body(bodies[0], [x], "ref", noise)
            k += 1
        return x
    if node.op == "scan":
        c, xs = args
        ys = [None] * len(xs)
        order = range(len(xs) - 1, -1, -1) if p["reverse"] else range(len(xs))
        for i in order:
            c = run_body(bodies[0], [c, xs[i]], "ref", noise)
            ys[i] = np.asarray(c)
        if p["out"] == "carry":
            return c
        return np.stack(ys) if ys else np.zeros((0, *np.shape(c)), np.asarray(c).dtype)
    (x,) = args
    for _ in range(p["lo"], p["hi"]):
        x = run_body(bodies[0], [x], "ref", noise)
    return x


def numbax_function(program: Program):
    """The program as a function of its inputs returning a tuple of its outputs."""
    def f(*args):
        env = run_nodes(program.nodes, list(args), "nbx")
        return tuple(env[i] for i in program.outputs)

    return f


def reference_values(program: Program, args: list, noise: int | None = None) -> list:
    """Every value of the program (inputs first) computed by the numpy reference; with a
    `noise` seed, each inexact op's result carries a random rounding error."""
    rng = None if noise is None else np.random.default_rng(noise)
    return [np.asarray(v) for v in run_nodes(program.nodes, [np.asarray(a) for a in args],
                                              "ref", rng)]
