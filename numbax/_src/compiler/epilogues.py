"""Dense layers' epilogues: a dense layer's `x @ w + b`, its `max(x @ w + b, 0)`, its
`jax.nn.gelu(x @ w + b)` and (on the CPU) its `tanh(x @ w + b)` and `sigmoid(x @ w + b)`,
rewritten into one `gemm_epilogue` equation that a backend computes in its product (as XLA's
GEMM rewriter does): on the GPU one cuBLASLt call
(cuda/runtime/cublaslt.py), on the CPU numbax's GEMM adding the bias and applying the
activation to each tile of C while it is in L1 (cpu/runtime/gemm.py; a product on BLAS gets
one pass over its result instead).

What it saves is a loop nest that reads the product and writes it again: a ReLU layer of
batch 4096 x 512 float32 is 16 MB of traffic and, on the GPU, a launch. Where the sum goes on
into other elementwise work, the nest stays and only the add moves into the product.

An equation chain is rewritten only when nothing else reads its intermediates: the product is
read by the add alone, and, for ReLU and GELU, the sum by the activation's equations alone (a
training step's backward pass reads the sum for the activation's derivative, so there only the
bias joins the product). Which products qualify is the backend's to say (`fuse`'s `takes`):
two matrices without batch dimensions, one dtype throughout that its product computes, the
bias a vector broadcast along the rows. ReLU here is `max(z, 0.0)` with a literal +0.0, which
is what `jax.nn.relu` and `jnp.maximum(z, 0)` trace to; NaN propagates as `max` does
(cuBLASLt's ReLU measured on an H200). GELU is the tanh form, matched as `jax.nn.gelu(z)`
(approximate=True, JAX's default) traces it: the eight equations
`z * (0.5 * (1 + tanh(sqrt(2/pi) * (z + 0.044715 * z**3))))`; the exact (erf) form is not
fused. A tanh or sigmoid layer fuses in training too: their derivatives read their output,
not the sum (ReLU's and GELU's read the sum); cuBLASLt has neither epilogue, so the GPU leaves
them out (`fuse`'s `activations`). Only the top-level jaxpr is rewritten.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from numbax._src import core, typecheck
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Primitive, Var
from numbax._src.interpreters import ad, batching
from numbax._src.lax import dot as ld
from numbax._src.lax import elementwise as lx
from numbax._src.lax import shape_ops as ls

gemm_epilogue_p = Primitive("gemm_epilogue")
ACTIVATIONS = ("none", "relu", "gelu", "tanh", "sigmoid")
CPU_ACTIVATIONS = ("relu", "gelu", "tanh", "sigmoid")  # the CPU's GEMM applies each to its tiles
# activations that are one unary primitive of the sum, read by nothing else
UNARY = {"tanh": lx.tanh_p, "sigmoid": lx.logistic_p}
GELU_CUBE, GELU_SCALE = 0.044715, float(np.sqrt(2 / np.pi))  # jax.nn.gelu's tanh form


def _abstract_eval(x, y, bias, *, dimension_numbers, precision, preferred_element_type,
                   activation, scale=1.0):
    return core.abstract_eval_rules[ld.dot_general_p](
        x, y, dimension_numbers=dimension_numbers, precision=precision,
        preferred_element_type=preferred_element_type)


def _impl(x, y, bias, *, dimension_numbers, precision, preferred_element_type, activation,
          scale=1.0):
    """The chain it replaces, on the host (the driver's fallback where no rule applies)."""
    (out,) = core.impl_rules[ld.dot_general_p](
        x, y, dimension_numbers=dimension_numbers, precision=precision,
        preferred_element_type=preferred_element_type)
    out = np.asarray(out)
    if activation == "update":
        return [np.asarray(bias) + out.dtype.type(scale) * out]
    z = (out + np.asarray(bias)[None, :]).astype(out.dtype)
    if activation == "relu":
        return [np.maximum(z, z.dtype.type(0))]
    if activation == "gelu":
        c = z.dtype.type
        inner = c(GELU_SCALE) * (z + c(GELU_CUBE) * z ** 3)
        return [z * (c(0.5) * (c(1) + np.tanh(inner)))]
    if activation in UNARY:
        (out,) = core.impl_rules[UNARY[activation]](z)
        return [out]
    return [z]


def _composite(x, y, bias, *, dimension_numbers, precision, preferred_element_type,
               activation, scale=1.0):
    """The equations the rewrite replaced, for the primitive's jvp and batching rules (the
    rewrite runs after every transformation, but the primitive keeps the matrix's contract)."""
    z = ld.dot_general_p.bind(x, y, dimension_numbers=dimension_numbers, precision=precision,
                              preferred_element_type=preferred_element_type)
    aval = core.get_aval(z)

    def const(value):
        return ls.broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())

    if activation == "update":
        return lx.add(bias, lx.mul(const(scale), z))
    z = lx.add(z, ls.broadcast_in_dim(bias, aval.shape, (1,)))
    if activation == "relu":
        z = lx.max(z, const(0))
    elif activation == "gelu":
        inner = lx.mul(const(GELU_SCALE), lx.add(z, lx.mul(const(GELU_CUBE),
                                                            lx.integer_pow(z, 3))))
        z = lx.mul(z, lx.mul(const(0.5), lx.add(const(1), lx.tanh(inner))))
    elif activation in UNARY:
        z = UNARY[activation].bind(z)
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


def fuse(jaxpr: Jaxpr, takes: Callable[[JaxprEqn], bool],
         activations: tuple = ("relu", "gelu"), updates: bool = False) -> Jaxpr:
    """`jaxpr` with each dense layer's product (a dot_general for which `takes` holds), bias add
    and activation (one of `activations`, where nothing else reads their intermediates) as one
    gemm_epilogue equation, and with `updates` each product read only by base + s * product
    (`_update`) as one too; unchanged when there is none."""
    uses = Counter(x for e in jaxpr.eqns for x in e.invars if isinstance(x, Var))
    uses.update(x for x in jaxpr.outvars if isinstance(x, Var))
    producer = {v: e for e in jaxpr.eqns for v in e.outvars}
    readers: dict[Var, list[JaxprEqn]] = {}
    for e in jaxpr.eqns:
        for x in dict.fromkeys(x for x in e.invars if isinstance(x, Var)):
            readers.setdefault(x, []).append(e)
    consumer = {x: es[-1] for x, es in readers.items()}  # the reader of a once-read value
    order = {id(e): i for i, e in enumerate(jaxpr.eqns)}
    # the new equation takes the place of its chain's last one, after every operand's
    # definition (the bias row may be computed after the product) and before every reader
    replaced: dict[int, JaxprEqn] = {}  # id of the chain's last equation -> the new one
    dropped: set[int] = set()  # ids of the chain's other equations
    for eqn in jaxpr.eqns:
        if eqn.primitive is not ld.dot_general_p or not takes(eqn) \
                or uses[eqn.outvars[0]] != 1:
            continue
        add = consumer.get(eqn.outvars[0])  # None: the product is only an output
        bias = None if add is None else _bias(add, eqn.outvars[0], producer)
        update = _update(add, eqn.outvars[0], uses, consumer, producer) \
            if updates and add and bias is None else None
        if update is not None:
            base, scale, chain = update
            # in the product's place where the base is known there (a weight), so the driver
            # can still run it beside its neighbour product (an input gradient's)
            at = eqn if base not in producer or order[id(producer[base])] < order[id(eqn)] \
                else chain[-1]
            replaced[id(at)] = JaxprEqn(
                gemm_epilogue_p, [*eqn.invars, base], list(chain[-1].outvars),
                {**eqn.params, "activation": "update", "scale": scale})
            dropped.update(id(e) for e in (eqn, *chain) if e is not at)
        if bias is None:
            continue
        z = add.outvars[0]
        activation, tail = "none", []
        only = consumer.get(z) if uses[z] == 1 else None  # z's one reader
        if only is not None and "relu" in activations and _is_relu(only, z):
            activation, tail = "relu", [only]
        elif only is not None and (unary := next(
                (a for a in activations if UNARY.get(a) is only.primitive), None)):
            activation, tail = unary, [only]
        elif "gelu" in activations and (gelu := _gelu(z, uses, readers, consumer)) is not None:
            activation, tail = "gelu", gelu
        last = tail[-1] if tail else add
        broadcast = producer[bias]
        chain = [eqn, add, *tail,
                 broadcast if uses[broadcast.outvars[0]] == 1 else None]  # its reader: the add
        replaced[id(last)] = JaxprEqn(gemm_epilogue_p, [*eqn.invars, broadcast.invars[0]],
                                      list(last.outvars), {**eqn.params, "activation": activation})
        dropped.update(id(e) for e in chain if e is not None and e is not last)
    if not replaced:
        return jaxpr
    eqns = [replaced.get(id(e), e) for e in jaxpr.eqns if id(e) not in dropped]
    return typecheck.check_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars))


CPU_DTYPES = (np.float32, np.float64)  # numbax's GEMM's (BLAS and one pass for the rest)


def cpu_takes(eqn: JaxprEqn) -> bool:
    """Whether the CPU driver computes this product with a dense layer's epilogue."""
    return matrix_product(eqn, CPU_DTYPES)


def matrix_product(eqn: JaxprEqn, dtypes: tuple) -> bool:
    """A product of two non-empty matrices over one axis each, without batch dimensions, its
    operands and result of one of `dtypes` (the first test of every backend's `takes`)."""
    x, y = (v.aval for v in eqn.invars[:2])
    out = eqn.outvars[0].aval
    (xc, _), (xb, yb) = eqn.params["dimension_numbers"]
    if xb or yb or len(xc) != 1 or x.ndim != 2 or y.ndim != 2 or 0 in (*x.shape, *y.shape):
        return False
    return x.dtype == y.dtype == out.dtype and out.dtype in dtypes


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


def _update(first: JaxprEqn, product: Var, uses: Counter, consumer: dict,
            producer: dict) -> tuple[Var, float, list[JaxprEqn]] | None:
    """(base, scale, the equations after the product) where the product's readers are one
    chain computing base + scale * product: `base - s * product`, `base + s * product` (s a
    scalar literal of the product's dtype, on either side of the multiply: an SGD step's
    `w - lr * g`), `base + product`, `product + base` or `base - product` (a residual), base
    an array of the product's shape and dtype, not a broadcast (a bias, which `_bias` takes;
    materialised, it would cost a pass); None otherwise. base - s * p is base + (-s) * p and
    p * s is s * p exactly in IEEE arithmetic, so the fused result has the chain's bits."""
    aval = product.aval
    scale, chain, v = 1.0, [first], product
    if first.primitive is lx.mul_p:
        other = first.invars[1] if first.invars[0] is product else first.invars[0]
        if not (isinstance(other, Literal) and other.aval.shape == ()
                and other.aval.dtype == aval.dtype) or uses[first.outvars[0]] != 1:
            return None
        scale, v = float(np.asarray(other.val, aval.dtype)), first.outvars[0]
        if consumer.get(v) is None:
            return None
        chain.append(consumer[v])
    last = chain[-1]
    if last.primitive is lx.sub_p and last.invars[1] is v and last.invars[0] is not v:
        base, scale = last.invars[0], -scale
    elif last.primitive is lx.add_p and v in last.invars:
        base = last.invars[1] if last.invars[0] is v else last.invars[0]
    else:
        return None
    out = last.outvars[0].aval
    made = producer.get(base)
    if not isinstance(base, Var) or base is v or (
            made is not None and made.primitive is ls.broadcast_in_dim_p) or any(
            (a.shape, a.dtype) != (aval.shape, aval.dtype) for a in (base.aval, out)):
        return None
    return base, scale, chain


def _is_relu(eqn: JaxprEqn, z: Var) -> bool:
    """`max(z, +0.0)` (either operand order)."""
    if eqn.primitive is not lx.max_p:
        return False
    other = eqn.invars[1] if eqn.invars[0] is z else eqn.invars[0]
    if not isinstance(other, Literal) or other.aval.shape != ():
        return False
    value = np.asarray(other.val)
    return bool(value == 0 and not np.signbit(value))


def _gelu(z: Var, uses: Counter, readers: dict, consumer: dict) -> list[JaxprEqn] | None:
    """The eight equations of `jax.nn.gelu(z)`'s tanh form, in order, when they are z's only
    readers and each intermediate is read by the next alone (None otherwise)."""
    if uses[z] != 3:
        return None
    cube = [e for e in readers.get(z, ()) if e.primitive is lx.integer_pow_p
            and e.params["y"] == 3]
    if len(cube) != 1:
        return None
    # each step: the primitive and what its other operand must be (z itself, a literal, none)
    steps = ((lx.mul_p, GELU_CUBE), (lx.add_p, z), (lx.mul_p, GELU_SCALE), (lx.tanh_p, None),
             (lx.add_p, 1.0), (lx.mul_p, 0.5), (lx.mul_p, z))
    chain, v = cube, cube[0].outvars[0]
    for primitive, other in steps:
        eqn = consumer.get(v) if uses[v] == 1 else None
        if eqn is None or eqn.primitive is not primitive:
            return None
        if other is not None:
            rest = eqn.invars[1] if eqn.invars[0] is v else eqn.invars[0]
            if not (rest is z if isinstance(other, Var) else _is_constant(rest, other)):
                return None
        chain.append(eqn)
        v = eqn.outvars[0]
    # z's three reads are the cube's, the inner add's and the final product's
    return chain if set(map(id, readers[z])) == {id(chain[0]), id(chain[2]), id(chain[7])} \
        else None


def _is_constant(x, value: float) -> bool:
    """x is a scalar literal equal to `value` rounded to its dtype."""
    if not isinstance(x, Literal) or x.aval.shape != ():
        return False
    return bool(np.asarray(x.val) == np.asarray(value, x.aval.dtype))
