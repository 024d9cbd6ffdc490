"""str(jaxpr) in JAX's layout: a port of JAX's pretty printer (Wadler/Lindig documents of
text, breaks, nesting and groups, laid out 80 columns wide) and of its jaxpr documents
(jax._src.core.pp_toplevel_jaxpr): equations one a line when a jaxpr does not fit on one, params
sorted by name and broken over lines as `[` ... `]`, sub-jaxprs used more than once or longer
than 10 equations printed first as `let name = { ... } in`.

The one-line forms (pp_eqn, pp_jaxpr_lines) serve the comments of generated kernels. core
imports this module (which imports no IR module), so the IR's classes are recognised by their
attributes: a Literal has `val`, a ClosedJaxpr `consts`, a Jaxpr `eqns`.
"""
from __future__ import annotations

import re
from collections import Counter, deque
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.dtypes import kind_of

WIDTH = 80
_FLAT, _BREAK = 0, 1


class Doc:
    __slots__ = ()

    def __add__(self, other: Doc) -> Doc:
        return Concat((self, other))


class Text(Doc):
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Concat(Doc):
    __slots__ = ("children",)

    def __init__(self, children: Any) -> None:
        self.children = tuple(children)


class Brk(Doc):
    __slots__ = ("text",)

    def __init__(self, text: str = " ") -> None:
        self.text = text


class Group(Doc):
    __slots__ = ("child",)

    def __init__(self, child: Doc) -> None:
        self.child = child


class Nest(Doc):
    __slots__ = ("n", "child")

    def __init__(self, n: int, child: Doc) -> None:
        self.n, self.child = n, child


def join(sep: Doc, docs: list[Doc]) -> Doc:
    out: list[Doc] = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return Concat(out)


def _fits(width: int, agenda: list) -> bool:
    while width >= 0 and agenda:
        i, mode, doc = agenda.pop()
        if isinstance(doc, Text):
            width -= len(doc.text)
        elif isinstance(doc, Concat):
            agenda.extend((i, mode, d) for d in reversed(doc.children))
        elif isinstance(doc, Brk):
            if mode == _BREAK:
                return True
            width -= len(doc.text)
        elif isinstance(doc, Nest):
            agenda.append((i + doc.n, mode, doc.child))
        elif isinstance(doc, Group):
            agenda.append((i, _FLAT, doc.child))
    return width >= 0


def format_doc(doc: Doc, width: int = WIDTH) -> str:
    """The layout of `doc`: each group on one line when it fits in what is left of the line."""
    lines: list[str] = []
    line, col = "", 0
    agenda = [(0, _BREAK, doc)]
    while agenda:
        i, mode, d = agenda.pop()
        if isinstance(d, Text):
            line += d.text
            col += len(d.text)
        elif isinstance(d, Concat):
            agenda.extend((i, mode, c) for c in reversed(d.children))
        elif isinstance(d, Brk):
            if mode == _BREAK:
                lines.append(line)
                line, col = " " * i, i
            else:
                line += d.text
                col += len(d.text)
        elif isinstance(d, Nest):
            agenda.append((i + d.n, mode, d.child))
        elif isinstance(d, Group):
            flat = _fits(width - col, [(i, _FLAT, d.child)])
            agenda.append((i, _FLAT if flat else _BREAK, d.child))
    lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------- one-line forms (kernel comments)


class PrintNames:
    """JAX-style variable names: a, b, ..., z, ba, bb, ... shared by nested jaxprs.

    `generic_shapes` prints every dimension and float literal as `?` (f32[?,?], shape=(?, ?),
    ?:f32[]): the comments of a compiled kernel that serves every shape of one rank must read
    the same for all of them. `flat` also prints every array of rank 1 or more as `[?]`: a
    kernel that loops over its operands as flat vectors serves every rank."""

    def __init__(self, generic_shapes: bool = False, flat: bool = False) -> None:
        self.names: dict[Any, str] = {}
        self.generic_shapes = generic_shapes or flat
        self.flat = flat

    def aval(self, aval: Any) -> str:
        if self.generic_shapes and getattr(aval, "shape", None) is not None:
            dims = ("?",) if self.flat and aval.shape else tuple("?" for _ in aval.shape)
            return f"{dtypes.short_name(aval.dtype)}[{','.join(dims)}]"
        return aval.str_short()

    def __call__(self, v: Any) -> str:
        if v not in self.names:
            n = len(self.names)
            letters = ""
            while True:
                letters = chr(ord("a") + n % 26) + letters
                n //= 26
                if n == 0:
                    break
            self.names[v] = letters
        return self.names[v]


def pp_literal(lit: Any, names: PrintNames | None = None) -> str:
    value = lit.val
    if value.dtype == np.bool_:
        text = str(bool(value))
    elif kind_of(value.dtype) in "fc" and not lit.aval.weak_type:
        text = str(value.item())  # as JAX prints a converted constant: 1.67 in float32 is
                                  # 1.6699999570846558 (a weak-typed one prints as written)
    else:
        text = str(value)
    if names is not None and names.generic_shapes and kind_of(value.dtype) in "fc":
        text = "?"  # a kernel parameter (the float literals of generic kernels may be sizes')
    return f"{text}:{names.aval(lit.aval) if names else lit.aval.str_short()}"


def pp_atom(x: Any, names: PrintNames) -> str:
    return pp_literal(x, names) if _is_literal(x) else names(x)


_SHAPE_PARAMS = frozenset({"shape", "new_sizes"})  # printed as (?, ...) with generic shapes


def pp_param(value: Any, names: PrintNames, indent: int, key: str = "") -> str:
    if names.generic_shapes and key in _SHAPE_PARAMS and isinstance(value, tuple):
        return "(" + ", ".join("?" for _ in value) + ("," if len(value) == 1 else "") + ")"
    if _open_jaxpr(value) is not None:
        return pp_jaxpr_lines(_open_jaxpr(value), names, indent + 2, inline_ok=True)
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, str) and not value.isprintable():
        return repr(value)  # a user string (an axis name) never breaks a line of generated code
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple (of jaxprs):
        return str(value)  # each entry printed on its own, as JAX prints one
    if isinstance(value, tuple) and value and _open_jaxpr(value[0]) is not None:
        return "(" + ", ".join(pp_param(v, names, indent) for v in value) + ")"
    return str(value)


def pp_eqn(eqn: Any, names: PrintNames, indent: int) -> str:
    lhs = " ".join(f"{names(v)}:{names.aval(v.aval)}" for v in eqn.outvars)
    params = " ".join(f"{k}={pp_param(v, names, indent, k)}" for k, v in eqn.params.items())
    head = eqn.primitive.name + (f"[{params}]" if params else "")
    args = " ".join(pp_atom(x, names) for x in eqn.invars)
    return f"{lhs} = {head} {args}".rstrip() if lhs else f"{head} {args}".rstrip()


def pp_jaxpr_lines(jaxpr: Any, names: PrintNames, indent: int, inline_ok: bool) -> str:
    binders = lambda vs: " ".join(f"{names(v)}:{names.aval(v.aval)}" for v in vs)  # noqa: E731
    consts = binders(jaxpr.constvars)
    ins = binders(jaxpr.invars)
    eqns = [pp_eqn(e, names, indent) for e in jaxpr.eqns]
    outs = ", ".join(pp_atom(v, names) for v in jaxpr.outvars)
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    head = f"{{ lambda {consts}; {ins}. let"
    one_line = f"{head} {'; '.join(eqns)} in {outs} }}"  # JAX's "let  in" when empty
    if inline_ok and len(one_line) + indent <= 80 and "\n" not in one_line:
        return one_line
    pad = " " * indent
    body = "".join(f"\n{pad}    {e}" for e in eqns)
    return f"{head}{body}\n{pad}  in {outs} }}"


def pp_jaxpr(jaxpr: Any) -> str:
    """str(jaxpr): JAX's layout."""
    return pp_toplevel(jaxpr)


def _is_literal(x: Any) -> bool:
    return hasattr(x, "val")


def _open_jaxpr(v: Any) -> Any:
    """The Jaxpr of a Jaxpr or ClosedJaxpr, else None."""
    if hasattr(v, "consts") and hasattr(v, "jaxpr"):
        return v.jaxpr
    return v if hasattr(v, "eqns") and hasattr(v, "constvars") else None


def _jaxprs_in_params(params: dict) -> list:
    out = []
    for val in params.values():
        for v in val if isinstance(val, tuple) else (val,):
            if _open_jaxpr(v) is not None:
                out.append(_open_jaxpr(v))
    return out


# ----------------------------------------------------------------------------- jaxprs


class _Context:
    def __init__(self) -> None:
        self.names = PrintNames()
        self.shared: dict[int, str] = {}  # id(jaxpr) -> its `let` name


def _vars(vs: list, ctx: _Context, *, separator: str = "", shapes: bool = False) -> Doc:
    def one(v: Any) -> Doc:
        if shapes:
            return Text(f"{ctx.names(v)}:{ctx.names.aval(v.aval)}")
        return Text(pp_atom(v, ctx.names))
    return Nest(2, Group(join(Text(separator) + Group(Brk()), [one(v) for v in vs])))


def _kv_pair(k: str, v: Any, ctx: _Context) -> Doc:
    if type(v) is tuple and v and all(_open_jaxpr(j) is not None for j in v):
        val = Group(Concat([Nest(2, Concat([Text("("), Brk(""), join(
            Brk(), [_jaxpr(_open_jaxpr(j), ctx) for j in v])])), Brk(""), Text(")")]))
    elif _open_jaxpr(v) is not None:
        val = _jaxpr(_open_jaxpr(v), ctx)
    elif isinstance(v, frozenset):
        val = Text(f"frozenset({{{', '.join(repr(e) for e in sorted(v))}}})")
    else:  # object addresses masked, as JAX prints them (a reduce's computation)
        val = Text(re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                          pp_param(v, ctx.names, 0, k)))
    return Text(f"{k}=") + val


def _eqn(eqn: Any, ctx: _Context) -> Doc:
    lhs = _vars(eqn.outvars, ctx, shapes=True)
    params: Doc = Concat(())
    if eqn.params:
        pairs = [_kv_pair(k, eqn.params[k], ctx) for k in sorted(eqn.params)]
        params = Group(Concat([Nest(2, Concat([Text("["), Brk(""), join(Brk(), pairs)])),
                               Brk(""), Text("]")]))
    rhs = [Text(eqn.primitive.name), params, Text(" ") + _vars(eqn.invars, ctx)]
    return Concat([lhs, Text(" = "), *rhs]) if eqn.outvars else Concat(rhs)


def _skeleton(jaxpr: Any, ctx: _Context) -> Doc:
    consts = _vars(jaxpr.constvars, ctx, shapes=True)
    ins = _vars(jaxpr.invars, ctx, shapes=True)
    eqns = join(Brk("; "), [_eqn(e, ctx) for e in jaxpr.eqns])
    outs = Concat([Text("("), _vars(jaxpr.outvars, ctx, separator=","),
                   Text(")" if len(jaxpr.outvars) != 1 else ",)")])
    return Group(Nest(2, Concat([
        Text("{ "), Text("lambda "), consts, Text("; "), ins, Text(". "), Text("let"),
        Nest(2, Brk() + eqns), Brk(), Text("in "), outs])) + Text(" }"))


def _jaxpr(jaxpr: Any, ctx: _Context) -> Doc:
    name = ctx.shared.get(id(jaxpr))
    return Text(name) if name is not None else _skeleton(jaxpr, ctx)


def pp_toplevel(top: Any) -> str:
    """JAX's str(jaxpr) of a numbax Jaxpr."""
    ctx = _Context()
    names: dict[int, str] = {}
    counts: Counter = Counter()
    objects: dict[int, Any] = {}
    queue = deque([top])
    while queue:
        jaxpr = queue.popleft()
        objects[id(jaxpr)] = jaxpr
        counts[id(jaxpr)] += 1
        if jaxpr is not top and len(jaxpr.eqns) > 10:
            counts[id(jaxpr)] += 1
        for eqn in jaxpr.eqns:
            name = eqn.params.get("name")
            subs = list(_jaxprs_in_params(eqn.params))
            queue.extend(subs)
            if isinstance(name, str):
                for sub in subs:
                    names.setdefault(id(sub), name.strip("<>"))
    used: Counter = Counter()
    docs: list[Doc] = []
    shared = []
    for key, c in counts.items():
        if c == 1:
            continue
        name = names.get(key, "jaxpr")
        if used[name] > 0:
            count = used[name]
            used[name] += 1
            name += str(count)
        used[name] += 1
        ctx.shared[key] = name
        shared.append((name, objects[key]))
    for name, jaxpr in shared:
        docs.append(Concat([Text("let "), Text(name), Text(" = "), _skeleton(jaxpr, ctx),
                            Text(" in"), Brk()]))
    docs.append(_jaxpr(top, ctx))
    return format_doc(Concat(docs))
