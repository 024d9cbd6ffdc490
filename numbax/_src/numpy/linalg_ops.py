"""numpy's products (dot, matmul, tensordot, einsum, kron, cross) lowered to lax.dot_general."""
from __future__ import annotations

import builtins
import operator
import string
from collections.abc import Sequence
from typing import Any

from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axis

__all__ = ["dot", "matmul", "vdot", "vecdot", "inner", "outer", "tensordot", "einsum", "kron",
           "cross"]


def _dot_general(lhs: Any, rhs: Any, contract: tuple, batch: tuple = ((), ()), *,
                 precision: Any = None, preferred_element_type: Any = None) -> Any:
    from numbax._src.lax.dot import dot_general

    return dot_general(lhs, rhs, (tuple(map(tuple, contract)), tuple(map(tuple, batch))),
                       precision=precision, preferred_element_type=preferred_element_type)


def _promote(api: str, *args: Any) -> list[Any]:
    return ufuncs.promote_dtypes(api, *[asarray(x) if isinstance(x, (list, tuple)) else x
                                        for x in args])


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """numpy.dot: sums over a's last axis and b's second-to-last (last, when b is 1-d)."""
    a, b = _promote("dot", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        return ufuncs.multiply(a, b)
    b_ax = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[b_ax]:
        raise ShapeDtypeError(
            f"numbax.numpy.dot: a has shape {sa} and b has shape {sb}; the last axis of a "
            f"({sa[-1]}) must equal axis {b_ax} of b ({sb[b_ax]})."
        )
    return _dot_general(a, b, ((len(sa) - 1,), (b_ax,)), precision=precision,
                        preferred_element_type=preferred_element_type)


def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """numpy.matmul: matrix products over the last two axes, broadcasting the rest.

    Args:
      a, b: arrays of rank >= 1; a 1-d operand is a row (a) or column (b) vector.

    Returns:
      The batched product, one dot_general with the broadcast leading axes as batch axes.

    >>> import numpy as np
    >>> matmul(np.ones((2, 3)), np.ones(3))
    Array([3., 3.], dtype=float64)
    """
    a, b = _promote("matmul", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        raise NumbaxValueError(
            f"numbax.numpy.matmul: a has shape {sa} and b has shape {sb}; matmul needs arrays "
            "of rank >= 1. Use multiply for scalars."
        )
    sa2 = (1, sa[0]) if len(sa) == 1 else sa  # a vector as a row (a) or a column (b)
    sb2 = (sb[0], 1) if len(sb) == 1 else sb
    if sa2[-1] != sb2[-2]:
        raise ShapeDtypeError(
            f"numbax.numpy.matmul: a has shape {sa} and b has shape {sb}; the last axis of a "
            f"({sa2[-1]}) must equal the second-to-last axis of b ({sb2[-2]})."
        )
    if len(sa2) == 2 and len(sb2) == 2:
        # two matrices, a vector and a matrix or two vectors: one dot_general on them as they
        # are, JAX's form (for vectors, a reshape and a squeeze around it cost two more eager
        # dispatches)
        return _dot_general(a, b, ((len(sa) - 1,), (0,)), ((), ()), precision=precision,
                            preferred_element_type=preferred_element_type)
    batch = ufuncs.broadcast_shapes("matmul", sa2[:-2], sb2[:-2])  # (the error for a mismatch)
    a2 = shape_ops.reshape(a, sa2) if len(sa) == 1 else a
    b2 = shape_ops.reshape(b, sb2) if len(sb) == 1 else b
    out = _broadcast_product(a2, b2, len(batch), precision, preferred_element_type)
    drop = []
    if len(sa) == 1:
        drop.append(len(batch))
    if len(sb) == 1:
        drop.append(len(batch) + 1)
    return shape_ops.squeeze(out, tuple(drop)) if drop else out


def _broadcast_product(a: Any, b: Any, nb: int, precision: Any,
                       preferred_element_type: Any) -> Any:
    """a @ b over the last two axes of each, with `nb` broadcast leading axes, as JAX forms it:
    an axis both operands have (at one size) is a batch axis of dot_general; an axis only one
    has, or where the other's size is 1, is a free axis of that operand (squeezed from the
    other), not a broadcast copy of the other. So activations (b, t, d) @ weights (d, n) are
    one (b*t, d) @ (d, n) product, and the weights' gradient one product too."""
    sa, sb = get_aval(a).shape, get_aval(b).shape
    a_axes = (None,) * (nb + 2 - len(sa)) + tuple(range(len(sa) - 2))  # a's axis per batch axis
    b_axes = (None,) * (nb + 2 - len(sb)) + tuple(range(len(sb) - 2))
    a_squeeze, b_squeeze, a_batch, b_batch = [], [], [], []
    where_batch, where_a, where_b = [], [], []  # output axis of each dot_general result axis
    for i, (x, y) in enumerate(zip(a_axes, b_axes, strict=True)):
        if x is not None and y is not None and sa[x] == sb[y] and sa[x] != 1:
            a_batch.append(x)
            b_batch.append(y)
            where_batch.append(i)
        elif y is None or (x is not None and sb[y] == 1):  # a's free axis
            if y is not None:
                b_squeeze.append(y)
            where_a.append(i)
        else:  # b's free axis (a lacks it, or has it at size 1)
            if x is not None:
                a_squeeze.append(x)
            where_b.append(i)
    a = shape_ops.squeeze(a, tuple(a_squeeze)) if a_squeeze else a
    b = shape_ops.squeeze(b, tuple(b_squeeze)) if b_squeeze else b
    # the batch axes' positions after squeezing (they keep their order)
    a_batch = [x - sum(s < x for s in a_squeeze) for x in a_batch]
    b_batch = [y - sum(s < y for s in b_squeeze) for y in b_batch]
    na, nbb = get_aval(a).ndim, get_aval(b).ndim
    out = _dot_general(a, b, ((na - 1,), (nbb - 2,)), (tuple(a_batch), tuple(b_batch)),
                       precision=precision, preferred_element_type=preferred_element_type)
    # dot_general gives (batch, a's free axes, b's free axes); matmul's order is the batch
    # axes as broadcast, then a's rows, then b's columns
    order = [*where_batch, *where_a, nb, *where_b, nb + 1]
    perm = sorted(range(len(order)), key=order.__getitem__)
    return out if perm == sorted(perm) else shape_ops.transpose(out, tuple(perm))


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    a, b = _promote("vdot", a, b)
    a = shape_ops.reshape(a, (get_aval(a).size,))
    b = shape_ops.reshape(b, (get_aval(b).size,))
    if kind_of(get_aval(a).dtype) == "c":
        a = lax.conj(a)
    return dot(a, b, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """numpy.vecdot: sum(conj(x1) * x2) over `axis`, broadcasting the rest."""
    x1, x2 = _promote("vecdot", x1, x2)
    if kind_of(get_aval(x1).dtype) == "c":
        x1 = lax.conj(x1)
    prod = ufuncs.multiply(x1, x2)
    ax = canonicalize_axis(axis, get_aval(prod).ndim, "vecdot")
    return lax_reductions.reduce_sum(prod, (ax,))


def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    a, b = _promote("inner", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        return ufuncs.multiply(a, b)
    if sa[-1] != sb[-1]:
        raise ShapeDtypeError(f"numbax.numpy.inner: a has shape {sa} and b has shape {sb}; "
                              "their last axes must have equal sizes.")
    return _dot_general(a, b, ((len(sa) - 1,), (len(sb) - 1,)), precision=precision,
                        preferred_element_type=preferred_element_type)


def outer(a: Any, b: Any, out: None = None) -> Any:
    a, b = _promote("outer", a, b)
    a = shape_ops.reshape(a, (get_aval(a).size, 1))
    b = shape_ops.reshape(b, (1, get_aval(b).size))
    return ufuncs.multiply(a, b)


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    a, b = _promote("tensordot", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if isinstance(axes, int):
        if axes < 0 or axes > builtins.min(len(sa), len(sb)):
            raise ShapeDtypeError(
                f"numbax.numpy.tensordot: axes={axes} for a of shape {sa} and b of shape {sb}, "
                "expected 0 <= axes <= the smaller rank."
            )
        ca = tuple(range(len(sa) - axes, len(sa)))
        cb = tuple(range(axes))
    else:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise NumbaxTypeError(f"numbax.numpy.tensordot: axes {axes!r} is neither an int "
                                  "nor a pair of axis sequences.") from None
        ax_a = (ax_a,) if isinstance(ax_a, int) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, int) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise NumbaxValueError(f"numbax.numpy.tensordot: axes {axes} pairs {len(ax_a)} axes "
                                   f"of a with {len(ax_b)} of b, expected equal counts.")
        ca = tuple(canonicalize_axis(x, len(sa), "tensordot", "axes") for x in ax_a)
        cb = tuple(canonicalize_axis(x, len(sb), "tensordot", "axes") for x in ax_b)
    for i, j in zip(ca, cb):
        if sa[i] != sb[j]:
            raise ShapeDtypeError(
                f"numbax.numpy.tensordot: a has shape {sa} and b has shape {sb}; contracted axis "
                f"{i} of a ({sa[i]}) and axis {j} of b ({sb[j]}) differ in size."
            )
    return _dot_general(a, b, (ca, cb), precision=precision,
                        preferred_element_type=preferred_element_type)


def kron(a: Any, b: Any) -> Any:
    a, b = _promote("kron", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    nd = builtins.max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    a = shape_ops.reshape(a, tuple(x for s in sa for x in (s, 1)))
    b = shape_ops.reshape(b, tuple(x for s in sb for x in (1, s)))
    return shape_ops.reshape(ufuncs.multiply(a, b), tuple(x * y for x, y in zip(sa, sb)))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """numpy.cross for 3-vectors (and 2-vectors, giving the z component)."""
    from numbax._src.numpy.shapes import _slice_axis, moveaxis, stack

    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _promote("cross", a, b)
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise NumbaxValueError(
            f"numbax.numpy.cross: a has {na} and b has {nb} components on the vector axis, "
            "expected 2 or 3."
        )

    def comp(x: Any, i: int) -> Any:
        n = get_aval(x).shape[-1]
        if i >= n:
            return None
        return shape_ops.squeeze(_slice_axis(x, get_aval(x).ndim - 1, i, i + 1), (-1,))

    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    sub, mul = ufuncs.subtract, ufuncs.multiply
    z = sub(mul(a0, b1), mul(a1, b0))
    if na == 2 and nb == 2:
        return z
    zero_a = a2 if a2 is not None else ufuncs.multiply(a0, 0)
    zero_b = b2 if b2 is not None else ufuncs.multiply(b0, 0)
    x = sub(mul(a1, zero_b), mul(zero_a, b1))
    y = sub(mul(zero_a, b0), mul(a0, zero_b))
    out = stack(ufuncs.broadcast_arrays("cross", x, y, z)
                if get_aval(x).shape == get_aval(y).shape == get_aval(z).shape
                else [ufuncs.broadcast_to_shape(v, ufuncs.broadcast_shapes(
                    "cross", *(get_aval(w).shape for w in (x, y, z)))) for v in (x, y, z)],
                axis=-1)
    return moveaxis(out, -1, axisc)


# ----------------------------------------------------------------------------- einsum


def _parse_einsum(subscripts: str, ndims: Sequence[int]) -> tuple[list[str], str]:
    """Input label strings (ellipses expanded to fresh uppercase labels) and the output."""
    subscripts = subscripts.replace(" ", "")
    if subscripts.count("->") > 1:
        raise NumbaxValueError(f"numbax.numpy.einsum: subscripts {subscripts!r} has more than "
                               "one '->', expected 'inputs->output'.")
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
        explicit = True
    else:
        lhs, out, explicit = subscripts, "", False
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise NumbaxValueError(
            f"numbax.numpy.einsum: subscripts {subscripts!r} name {len(terms)} operands but "
            f"{len(ndims)} were given."
        )
    for ch in lhs.replace(",", "").replace(".", "") + out.replace(".", ""):
        if ch not in string.ascii_letters:
            raise NumbaxValueError(f"numbax.numpy.einsum: subscripts {subscripts!r} contain "
                                   f"{ch!r}, expected letters, ',', '->' and '...'.")
    pool = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in subscripts]
    n_ells = []
    for term, nd in zip(terms, ndims):
        n_ell = nd - (len(term) - 3) if "..." in term else 0
        if n_ell < 0 or ("..." not in term and len(term) != nd):
            raise NumbaxValueError(
                f"numbax.numpy.einsum: term {term!r} does not match its operand's {nd} "
                "dimensions; give one label per dimension (or '...' for the rest)."
            )
        n_ells.append(n_ell)
    max_ell = builtins.max(n_ells, default=0)
    ell_all = "".join(pool[:max_ell])
    expanded = [term.replace("...", ell_all[max_ell - n:]) for term, n in zip(terms, n_ells)]
    if explicit:
        out = out.replace("...", ell_all)
    else:
        counts: dict[str, int] = {}
        for term in expanded:
            for ch in term:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell_all + "".join(sorted(c for c, k in counts.items()
                                       if k == 1 and c not in ell_all))
    return expanded, out


def _diagonalize(x: Any, labels: str) -> tuple[Any, str]:
    """Takes diagonals for labels repeated within one operand ('ii' -> 'i')."""
    from numbax._src.numpy.creation import diagonal

    while True:
        dup = next((c for c in labels if labels.count(c) > 1), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        x = diagonal(x, 0, i, j)
        labels = "".join(c for k, c in enumerate(labels) if k not in (i, j)) + dup


_LETTERS = string.ascii_lowercase + string.ascii_uppercase  # numpy's order


def _sublist_term(sub: Any) -> str:
    """One sublist of integer labels (Ellipsis for '...') as einsum letters, as numpy maps them."""
    try:
        return "".join("..." if s is Ellipsis else _LETTERS[operator.index(s)] for s in sub)
    except (TypeError, IndexError):
        raise NumbaxValueError(f"numbax.numpy.einsum: sublist {sub!r} is invalid, expected "
                               f"ints in [0, {len(_LETTERS)}) or Ellipsis.") from None


def _sublists_to_subscripts(first: Any, rest: tuple) -> tuple[str, tuple]:
    """The interleaved form (op0, sub0, op1, sub1, ..., [out]) as a subscripts string."""
    args = (first, *rest)
    ops, subs = args[0:len(args) - len(args) % 2:2], args[1::2]
    spec = ",".join(_sublist_term(sub) for sub in subs[:len(ops)])
    if len(args) % 2:
        spec += "->" + _sublist_term(args[-1])
    return spec, ops


def einsum(subscripts: str, /, *operands: Any, out: None = None, optimize: Any = "optimal",
           precision: Any = None, preferred_element_type: Any = None) -> Any:
    """numpy.einsum: parsed here and lowered to dot_general, reduce_sum and transpose.

    Args:
      subscripts: labels per operand, comma-separated, with an optional '->' output; '...'
        stands for broadcast dimensions. Without '->' the output is the labels used once,
        sorted (numpy's implicit mode).
      *operands: the arrays, promoted to their common dtype.
      optimize: accepted for JAX compatibility; ignored.
      precision, preferred_element_type: passed to each pairwise dot_general.

    Returns:
      The contraction. Operands are contracted left to right, each label summed as soon as
      no later operand or the output needs it.

    The interleaved form `einsum(a, [0, 1], b, [1, 2], [0, 2])` (integer labels, Ellipsis
    for '...') is accepted too, as in numpy and JAX.

    Unlike JAX: no opt_einsum path search.

    >>> import numpy as np
    >>> einsum("ij,j->i", np.ones((2, 3)), np.arange(3.0))
    Array([3., 3.], dtype=float64)
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _sublists_to_subscripts(subscripts, operands)
    ops = _promote("einsum", *operands) if operands else []
    terms, out_labels = _parse_einsum(subscripts, [get_aval(x).ndim for x in ops])
    sizes: dict[str, int] = {}
    for x, term in zip(ops, terms):
        for ch, d in zip(term, get_aval(x).shape):
            if sizes.get(ch, 1) not in (1, d) and d != 1:
                raise ShapeDtypeError(
                    f"numbax.numpy.einsum: label {ch!r} has size {sizes[ch]} in one operand and "
                    f"{d} in another (operand shapes "
                    f"{', '.join(str(get_aval(o).shape) for o in ops)})."
                )
            sizes[ch] = builtins.max(sizes.get(ch, 1), d) if ch in sizes else d
    for ch in out_labels:
        if ch not in sizes:
            raise NumbaxValueError(f"numbax.numpy.einsum: output label {ch!r} of {subscripts!r} "
                                   "does not appear in any input.")
    pending = []
    for x, term in zip(ops, terms):
        shape = get_aval(x).shape
        if builtins.any(d != sizes[ch] for ch, d in zip(term, shape)):
            x = ufuncs.broadcast_to_shape(x, tuple(sizes[ch] for ch in term))
        pending.append(_diagonalize(x, term))
    result = None
    while pending:
        x, lx = pending.pop(0)
        needed_later = set(out_labels).union(*[set(t) for _, t in pending])
        if result is None:
            result = _sum_unneeded(x, lx, needed_later)
            continue
        y, ly = result
        ly_set, lx_set = set(ly), set(lx)
        shared = [c for c in ly if c in lx_set]
        batch = [c for c in shared if c in needed_later]
        contract = [c for c in shared if c not in needed_later]
        y, ly = _sum_unneeded(y, ly, needed_later | lx_set)
        x, lx = _sum_unneeded(x, lx, needed_later | ly_set)
        dn_contract = (tuple(ly.index(c) for c in contract), tuple(lx.index(c) for c in contract))
        dn_batch = (tuple(ly.index(c) for c in batch), tuple(lx.index(c) for c in batch))
        out = _dot_general(y, x, dn_contract, dn_batch, precision=precision,
                           preferred_element_type=preferred_element_type)
        labels = "".join(batch) + "".join(c for c in ly if c not in shared) + "".join(
            c for c in lx if c not in shared)
        result = (out, labels)
    x, labels = _sum_unneeded(*result, set(out_labels))
    perm = tuple(labels.index(c) for c in out_labels)
    return shape_ops.transpose(x, perm)


def _sum_unneeded(x: Any, labels: str, needed: set) -> tuple[Any, str]:
    axes = tuple(i for i, c in enumerate(labels) if c not in needed)
    if not axes:
        return x, labels
    return (lax_reductions.reduce_sum(x, axes),
            "".join(c for i, c in enumerate(labels) if i not in axes))

