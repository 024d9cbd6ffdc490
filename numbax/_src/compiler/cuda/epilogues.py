"""Bias and ReLU epilogues of GPU matrix products: a dense layer's `x @ w + b`, and its
`max(x @ w + b, 0)`, rewritten into one `gemm_epilogue` equation that cuBLASLt computes in one
call (runtime/cublaslt.py), as XLA's GEMM rewriter does for cuBLASLt.

What it saves is a loop nest that reads the product and writes it again: a ReLU layer of
batch 4096 x 512 float32 is 16 MB of traffic and a launch. Where the sum goes on into other
elementwise work (a tanh layer), the nest stays and only the add moves into the product.

An equation chain is rewritten only when nothing else reads its intermediates: the product is
read by the add alone, and, for ReLU, the sum by the max alone (a training step's backward
pass reads the sum for ReLU's mask, so there only the bias joins the product). The product has
no batch dimensions, its operands and result share a float32 or float16 dtype that cuBLAS
computes, and the bias is a vector broadcast along the rows. ReLU here is `max(z, 0.0)` with a
literal +0.0, which is what `jax.nn.relu` and `jnp.maximum(z, 0)` trace to; cuBLASLt's ReLU
propagates NaN as `max` does (measured on an H200). Only the top-level jaxpr is rewritten.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from numbax._src import core, typecheck
from numbax._src.compiler.cuda.runtime import cublas
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Primitive, Var
from numbax._src.interpreters import ad, batching
from numbax._src.lax import dot as ld
from numbax._src.lax import elementwise as lx
from numbax._src.lax import shape_ops as ls

gemm_epilogue_p = Primitive("gemm_epilogue")
_ACTIVATIONS = ("none", "relu")


def _abstract_eval(x, y, bias, *, dimension_numbers, precision, preferred_element_type,
                   activation):
    return core.abstract_eval_rules[ld.dot_general_p](
        x, y, dimension_numbers=dimension_numbers, precision=precision,
        preferred_element_type=preferred_element_type)


def _impl(x, y, bias, *, dimension_numbers, precision, preferred_element_type, activation):
    """The chain it replaces, on the host (the driver's fallback where no rule applies)."""
    (out,) = core.impl_rules[ld.dot_general_p](
        x, y, dimension_numbers=dimension_numbers, precision=precision,
        preferred_element_type=preferred_element_type)
    out = np.asarray(out)
    z = (out + np.asarray(bias)[None, :]).astype(out.dtype)
    return [np.maximum(z, z.dtype.type(0)) if activation == "relu" else z]


def _composite(x, y, bias, *, dimension_numbers, precision, preferred_element_type,
               activation):
    """The equations the rewrite replaced, for the primitive's jvp and batching rules (the
    rewrite runs after every transformation, but the primitive keeps the matrix's contract)."""
    z = ld.dot_general_p.bind(x, y, dimension_numbers=dimension_numbers, precision=precision,
                              preferred_element_type=preferred_element_type)
    aval = core.get_aval(z)
    z = lx.add(z, ls.broadcast_in_dim(bias, aval.shape, (1,)))
    if activation == "relu":
        z = lx.max(z, ls.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ()))
    return z


def _jvp(primals, tangents, **params):
    return ad.jvp_flat(lambda *a: [_composite(*a, **params)], primals, tangents)


def _batch(axis_size, vals, dims, **params):
    axis = batching.AxisData(axis_size, None)
    return batching.vmap_flat(lambda *a: [_composite(*a, **params)], axis, dims, [0], vals), [0]


core.abstract_eval_rules[gemm_epilogue_p] = _abstract_eval  # a list, as dot_general's
core.impl_rules[gemm_epilogue_p] = _impl
ad.jvp_rules[gemm_epilogue_p] = _jvp
batching.batch_rules[gemm_epilogue_p] = _batch


def fuse(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with each dense layer's product, bias add and ReLU (where nothing else reads
    their intermediates) as one gemm_epilogue equation; unchanged when there is none."""
    uses = Counter(x for e in jaxpr.eqns for x in e.invars if isinstance(x, Var))
    uses.update(x for x in jaxpr.outvars if isinstance(x, Var))
    producer = {v: e for e in jaxpr.eqns for v in e.outvars}
    consumer = {x: e for e in jaxpr.eqns for x in e.invars if isinstance(x, Var)}
    # the new equation takes the place of its chain's last one, after every operand's
    # definition (the bias row may be computed after the product) and before every reader
    replaced: dict[int, JaxprEqn] = {}  # id of the chain's last equation -> the new one
    dropped: set[int] = set()  # ids of the chain's other equations
    for eqn in jaxpr.eqns:
        if not _product(eqn) or uses[eqn.outvars[0]] != 1:
            continue
        add = consumer.get(eqn.outvars[0])  # None: the product is only an output
        bias = None if add is None else _bias(add, eqn.outvars[0], producer)
        if bias is None:
            continue
        last, activation = add, "none"
        relu = consumer.get(add.outvars[0]) if uses[add.outvars[0]] == 1 else None
        if relu is not None and _is_relu(relu, add.outvars[0]):
            last, activation = relu, "relu"
        broadcast = producer[bias]
        chain = [eqn, add, relu if activation == "relu" else None,
                 broadcast if uses[broadcast.outvars[0]] == 1 else None]  # its reader: the add
        replaced[id(last)] = JaxprEqn(gemm_epilogue_p, [*eqn.invars, broadcast.invars[0]],
                                      list(last.outvars), {**eqn.params, "activation": activation})
        dropped.update(id(e) for e in chain if e is not None and e is not last)
    if not replaced:
        return jaxpr
    eqns = [replaced.get(id(e), e) for e in jaxpr.eqns if id(e) not in dropped]
    return typecheck.check_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars))


def _product(eqn: JaxprEqn) -> bool:
    """A matrix product cuBLASLt can take: two matrices, no batch dimensions, one float32 or
    float16 dtype throughout, a precision cuBLAS computes."""
    if eqn.primitive is not ld.dot_general_p:
        return False
    x, y = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    (_, _), (xb, yb) = eqn.params["dimension_numbers"]
    if xb or yb or x.ndim != 2 or y.ndim != 2 or 0 in (*x.shape, *y.shape):
        return False
    if not x.dtype == y.dtype == out.dtype or out.dtype not in (np.float32, np.float16):
        return False
    return cublas.compute_type(out.dtype, eqn.params["precision"]) is not None


def _bias(add: JaxprEqn, product: Var, producer: dict) -> Var | None:
    """The broadcast bias row `add` adds to `product` (None if it adds something else)."""
    if add.primitive is not lx.add_p:
        return None
    other = add.invars[1] if add.invars[0] is product else add.invars[0]
    if not isinstance(other, Var) or other is product or other not in producer:
        return None
    b = producer[other]
    if b.primitive is not ls.broadcast_in_dim_p or b.params["broadcast_dimensions"] != (1,):
        return None
    row = b.invars[0]
    if not isinstance(row, Var) or row.aval.dtype != product.aval.dtype or \
            tuple(row.aval.shape) != (product.aval.shape[1],):
        return None
    return other


def _is_relu(eqn: JaxprEqn, z: Var) -> bool:
    """`max(z, +0.0)` (either operand order)."""
    if eqn.primitive is not lx.max_p:
        return False
    other = eqn.invars[1] if eqn.invars[0] is z else eqn.invars[0]
    if not isinstance(other, Literal) or other.aval.shape != ():
        return False
    value = np.asarray(other.val)
    return bool(value == 0 and not np.signbit(value))
