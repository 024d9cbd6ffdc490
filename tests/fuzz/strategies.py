"""Hypothesis strategies drawing well-typed fuzzer programs.

`programs()` draws the transform first (gradient programs take only smooth float64 ops), then
inputs and nodes. Each node's operands are earlier values (or new inputs of the shapes the op
needs); its output aval comes from running the numpy reference on zeros, so the generator never
restates shape rules. A value carries a taint when an inexact op (ops.py) produced it or one
of its operands; discrete ops never read a tainted value."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from tests.fuzz.ops import KINDS, OPS, PRESERVING, Aval
from tests.fuzz.programs import CONTROL, Input, Node, Program, run_body, run_nodes

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
_COMMON = ["float64", "float32", "int64", "int32", "bool"]
LAYOUTS = ("C", "F", "strided", "reversed", "readonly", "array")
TRANSFORMS = ("jit", "jit", "jit", "jit", "vmap", "vmap", "grad", "jvp", "vmap_grad")
MAX_SIZE = 64


@dataclass
class Value:
    aval: Aval
    tainted: bool


SMALL_DIMS = (1, 2, 3, 2, 3, 4, 1, 0)
# benchmarks/fuzz_soak.py --large-shapes: axes long enough for kernels' row chunks, tails and
# per-row views (a parallel arm's three chunks of 130 rows), at most LARGE_SIZE elements
LARGE_DIMS = (1, 3, 17, 64, 130, 2, 1, 0, 5, 257)
LARGE_SIZE = 40_000
DIMS = SMALL_DIMS  # (the soak's worker sets LARGE_DIMS)


def _capped(shape: list) -> tuple:
    """`shape` with its longest axes shortened until it holds at most LARGE_SIZE elements."""
    while int(np.prod(shape, dtype=np.int64)) > LARGE_SIZE:
        k = int(np.argmax(shape))
        shape[k] = shape[k] // 4 + 1
    return tuple(shape)


def shapes(max_ndim: int = 3) -> st.SearchStrategy:
    dim = st.sampled_from(DIMS)
    return st.lists(dim, min_size=0, max_size=max_ndim).map(_capped)


def dtypes() -> st.SearchStrategy:
    return st.sampled_from(_COMMON) | st.sampled_from(DTYPES)


def _literal(kind: str, smooth: bool = False) -> st.SearchStrategy:
    if kind == "b":
        return st.booleans()
    if kind == "u":
        return st.sampled_from([0, 1, 2, 3, 7])
    if kind == "i":
        return st.sampled_from([0, 1, 2, 3, -1, 7, -4])
    if kind == "f" and smooth:  # gradient programs: finite values only
        return st.sampled_from([0.0, 1.0, -2.5, 0.1, 3.0])
    if kind == "f":
        return st.sampled_from([0.0, -0.0, 1.0, -2.5, 0.1, 3.0, float("inf"), float("nan"),
                                1e300])
    return st.sampled_from([1 + 2j, -0.5j, 0j, 2.0 + 0j])


class _Builder:
    """The program under construction. Values are named by ids in creation order (inputs may be
    added at any time); `program()` puts the inputs first and renumbers."""

    def __init__(self, draw, smooth: bool) -> None:
        self.draw = draw
        self.smooth = smooth
        self.inputs: list[tuple[int, Input]] = []
        self.nodes: list[tuple[int, Node]] = []  # (output id, node over ids)
        self.values: dict[int, Value] = {}
        # ops in an order drawn once per program: generation favours early entries of a list
        names = [n for n, s in OPS.items() if not smooth or s.smooth]
        self.op_order = draw(st.permutations(names))

    def _new_id(self, value: Value) -> int:
        vid = len(self.values)
        self.values[vid] = value
        return vid

    def new_input(self, shape: tuple, dtype: str, fill: str | None = None) -> int:
        draw = self.draw
        if fill is None:
            fill = "smooth" if self.smooth else draw(st.sampled_from(["normal", "normal",
                                                                      "special"]))
        layout = draw(st.sampled_from(LAYOUTS))
        vid = self._new_id(Value((tuple(shape), np.dtype(dtype)), False))
        self.inputs.append((vid, Input(tuple(shape), dtype, fill, layout,
                                       draw(st.integers(0, 999)))))
        return vid

    def add(self, node: Node, tainted: bool) -> bool:
        """Appends `node` (args are ids) if the numpy reference takes its operands."""
        avals = [self.values[i].aval for i in node.args]
        local = Node(node.op, tuple(range(len(avals))), node.params, node.bodies)
        out = _out_aval(local, avals)
        if out is None:
            return False
        self.nodes.append((self._new_id(Value(out, tainted)), node))
        return True

    def dtype_for(self, kinds: str) -> str:
        if self.smooth:
            return "bool" if kinds == "b" else "float64"
        options = [d for d in DTYPES if np.dtype(d).kind in kinds]
        common = [d for d in _COMMON if np.dtype(d).kind in kinds]
        return self.draw(st.sampled_from(common) | st.sampled_from(options) if common
                         else st.sampled_from(options))

    def pick(self, ok) -> int | None:
        candidates = [i for i, v in self.values.items() if ok(v)]
        return self.draw(st.sampled_from(candidates)) if candidates else None

    def program(self, outputs: list[int], transform: str, batch: int,
                in_axes: tuple) -> Program:
        order = [vid for vid, _ in self.inputs] + [vid for vid, _ in self.nodes]
        pos = {vid: k for k, vid in enumerate(order)}
        nodes = tuple(Node(n.op, tuple(pos[i] for i in n.args), n.params, n.bodies)
                      for _, n in self.nodes)
        return Program(tuple(x for _, x in self.inputs), nodes,
                       tuple(pos[i] for i in outputs), transform, batch, in_axes)


def _out_aval(node: Node, avals: list[Aval]) -> Aval | None:
    """The node's output aval from the numpy reference on zeros (None: it refuses them)."""
    zeros = [np.zeros(shape, dtype) for shape, dtype in avals]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = np.asarray(run_nodes((node,), zeros, "ref")[-1])
    except Exception:  # noqa: BLE001 - an op the drawn operands do not fit
        return None
    if out.dtype.kind not in KINDS or out.size > MAX_SIZE or out.ndim > 4:
        return None
    return out.shape, out.dtype


def _broadcastable(draw, shape: tuple) -> tuple:
    """A shape that broadcasts with `shape`: the same, a suffix, or with 1s."""
    form = draw(st.sampled_from(["same", "same", "suffix", "ones"]))
    if form == "suffix" and shape:
        return shape[draw(st.integers(0, len(shape))):]
    if form == "ones":
        return tuple(1 if draw(st.booleans()) else n for n in shape)
    return shape


def _op_node(b: _Builder) -> None:
    draw = b.draw
    spec = OPS[draw(st.sampled_from(b.op_order))]

    def fits(v: Value) -> bool:
        return (v.aval[1].kind in spec.kinds and (spec.valid is None or spec.valid(v.aval))
                and not (spec.discrete and v.tainted))

    first = b.pick(fits)
    if first is None:
        return
    aval = b.values[first].aval
    params = spec.params(draw, [aval]) if spec.params else {}
    args = [first]
    if spec.arity >= 2:
        if spec.literal_ok and draw(st.booleans()):
            params["lit"] = draw(_literal(aval[1].kind, b.smooth))
        else:
            shapes_ = (spec.shapes(draw, aval, params) if spec.shapes else
                       [_broadcastable(draw, aval[0]) for _ in range(spec.arity - 1)])
            kinds = spec.other_kinds or (spec.kinds,) * (spec.arity - 1)
            for shape, k in zip(shapes_, kinds, strict=True):
                same = [i for i, v in b.values.items() if v.aval[0] == shape and
                        v.aval[1].kind in k and not (spec.discrete and v.tainted)]
                if same and draw(st.booleans()):
                    args.append(draw(st.sampled_from(same)))
                else:
                    args.append(b.new_input(shape, b.dtype_for(k)))
    tainted = any(b.values[a].tainted for a in args) or any(
        b.values[a].aval[1].kind in spec.inexact for a in args)
    b.add(Node(spec.name, tuple(args), tuple(sorted(params.items()))), tainted)


def _body(b: _Builder, local: list[Aval], n_max: int = 3) -> tuple[tuple, bool]:
    """A chain of shape- and dtype-preserving ops over `local` (all of one aval)."""
    draw = b.draw
    aval = local[0]
    kind = aval[1].kind
    names = [n for n, s in PRESERVING.items() if kind in s.kinds and s.arity <= 2 and
             not s.discrete and (not b.smooth or s.smooth) and s.name != "where"]
    nodes, inexact = [], False
    count = len(local)
    for _ in range(draw(st.integers(0, n_max))):
        if not names:
            break
        spec = OPS[draw(st.sampled_from(names))]
        params = spec.params(draw, [aval]) if spec.params else {}
        args = [draw(st.integers(0, count - 1))]
        if spec.arity == 2:
            if spec.literal_ok and draw(st.booleans()):
                params["lit"] = draw(_literal(kind, b.smooth))
            else:
                args.append(draw(st.integers(0, count - 1)))
        nodes.append(Node(spec.name, tuple(args), tuple(sorted(params.items()))))
        inexact |= kind in spec.inexact
        count += 1
    body = tuple(nodes)
    zeros = [np.zeros(*a) for a in local]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = np.asarray(run_body(body, zeros, "ref"))
    except Exception:  # noqa: BLE001
        return (), False
    if (out.shape, out.dtype) != (aval[0], aval[1]):  # a literal promoted it: drop the body
        return (), False
    return body, inexact


def _control_node(b: _Builder, kind: str) -> None:
    draw = b.draw
    if kind == "scan":
        xs = b.pick(lambda v: len(v.aval[0]) >= 1 and v.aval[0][0] > 0)
        if xs is None:
            return
        row = b.values[xs].aval[0][1:], b.values[xs].aval[1]
        c0 = b.new_input(row[0], row[1].name)
        body, inexact = _body(b, [row, row])
        params = {"reverse": draw(st.booleans()), "out": draw(st.sampled_from(["ys", "carry"]))}
        b.add(Node("scan", (c0, xs), tuple(sorted(params.items())), (body,)),
              inexact or b.values[xs].tainted)
        return
    x = b.pick(lambda v: True)
    aval = b.values[x].aval
    n_bodies = {"cond": 2, "switch": draw(st.integers(1, 3))}.get(kind, 1)
    made = [_body(b, [aval]) for _ in range(n_bodies)]
    bodies = tuple(m[0] for m in made)
    tainted = any(m[1] for m in made) or b.values[x].tainted
    if kind == "fori":
        lo = draw(st.integers(0, 2))
        b.add(Node("fori", (x,), (("hi", lo + draw(st.integers(0, 3))), ("lo", lo)), bodies),
              tainted)
        return
    selector = b.new_input((), "bool" if kind == "cond" else draw(st.sampled_from(
        ["int32", "int64", "int8", "uint8"])), fill="index")
    b.add(Node(kind, (selector, x), (), bodies), tainted)


@st.composite
def programs(draw, transform: str | None = None, max_nodes: int = 5,
             control: bool = True) -> Program:
    """A random program and the transform it is checked under."""
    transform = transform or draw(st.sampled_from(TRANSFORMS))
    smooth = transform in ("grad", "jvp", "vmap_grad")
    b = _Builder(draw, smooth)
    for _ in range(draw(st.integers(1, 2))):
        b.new_input(draw(shapes()), "float64" if smooth else draw(dtypes()))
    kinds = ["op"] * 8 + ([k for k in CONTROL if not (smooth and k == "while")]
                          if control else [])
    for _ in range(draw(st.integers(1, max_nodes))):
        kind = draw(st.sampled_from(kinds))
        if kind == "op":
            _op_node(b)
        else:
            _control_node(b, kind)
    outputs = [len(b.values) - 1]
    if len(b.values) > 2 and draw(st.booleans()):
        outputs.append(draw(st.integers(0, len(b.values) - 2)))
    if transform in ("grad", "jvp", "vmap_grad"):  # differentiable outputs only
        outputs = [o for o in outputs if b.values[o].aval[1].kind == "f"] or [
            vid for vid, _ in b.inputs[:1]]
    batch, in_axes = 0, ()
    if transform in ("vmap", "vmap_grad"):
        batch = draw(st.integers(1, 3))
        in_axes = tuple(draw(st.sampled_from([0, 0, None])) for _ in b.inputs)
        if transform == "vmap_grad":
            in_axes = (0, *in_axes[1:])
        if all(a is None for a in in_axes):
            in_axes = (0, *in_axes[1:])
    return b.program(outputs, transform, batch, in_axes)
