"""cond and switch: one primitive, `cond`, holding one closed jaxpr per branch."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, ShapedArray
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import common

cond_p = Primitive("cond", multiple_results=True)


def _cond_abstract_eval(index: ShapedArray, *ops: ShapedArray, branches) -> list:
    if index.shape != () or kind_of(index.dtype) not in "iu":
        raise NumbaxTypeError(
            f"cond: index has type {index.str_short()}, expected an integer scalar.")
    return common.join_weak([b.out_avals for b in branches])


def _cond_impl(index, *ops, branches):
    i = int(np.clip(index, 0, len(branches) - 1))
    return core.eval_jaxpr(branches[i].jaxpr, branches[i].consts, *ops)


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    nonzeros = [type(t) is not ad.Zero for t in tangents[1:]]
    out_nz = [False] * len(branches[0].out_avals)
    for branch in branches:
        _, nz = ad.jvp_jaxpr(branch, nonzeros, instantiate=False)
        out_nz = [a or b for a, b in zip(out_nz, nz, strict=True)]
    jvp_branches = tuple(ad.jvp_jaxpr(b, nonzeros, instantiate=out_nz)[0] for b in branches)
    tangents_nz = [t for t in tangents[1:] if type(t) is not ad.Zero]
    outs = cond_p.bind(index, *ops, *tangents_nz, branches=jvp_branches)
    n = len(branches[0].out_avals)
    primals_out, tangents_nz_out = outs[:n], iter(outs[n:])
    tangents_out = [next(tangents_nz_out) if nz else ad.Zero(ad.tangent_aval(core.get_aval(p)))
                    for p, nz in zip(primals_out, out_nz, strict=True)]
    return primals_out, tangents_out


def _cond_partial_eval(trace: pe.PartialEvalTrace, tracers, *, branches):
    index, *ops = tracers
    if not index.pval.is_known:
        return pe.default_process_primitive(trace, cond_p, tracers, {"branches": branches})
    in_uk = [not t.pval.is_known for t in ops]
    out_uk = [False] * len(branches[0].out_avals)
    for branch in branches:
        _, _, uk, _ = pe.partial_eval_jaxpr(branch, in_uk, instantiate=False)
        out_uk = [a or b for a, b in zip(out_uk, uk, strict=True)]
    splits = [pe.partial_eval_jaxpr(b, in_uk, instantiate=out_uk) for b in branches]
    all_res = [a for known, _, _, nres in splits
               for a in known.out_avals[len(known.out_avals) - nres:]]
    known_branches, unknown_branches = [], []
    offset = 0
    for known, unknown, _, nres in splits:
        known_branches.append(_pad_residual_outputs(known, nres, offset, all_res))
        unknown_branches.append(common.insert_unused_inputs(
            common.insert_unused_inputs(unknown, 0, all_res[:offset]),
            offset + nres, all_res[offset + nres:]))
        offset += nres
    known_vals = [t.pval.const for t in ops if t.pval.is_known]
    known_outs = cond_p.bind(index.pval.const, *known_vals, branches=tuple(known_branches))
    n_known = len(known_outs) - len(all_res)
    residuals = known_outs[n_known:]
    res_tracers = [trace.instantiate_const(trace.lift(r)) for r in residuals]
    uk_tracers = [t for t in ops if not t.pval.is_known]
    index_tracer = trace.instantiate_const(index)
    unknown_outs = pe.default_process_primitive(
        trace, cond_p, [index_tracer, *res_tracers, *uk_tracers],
        {"branches": tuple(unknown_branches)})
    known_it, unknown_it = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(unknown_it) if uk else trace.lift(next(known_it)) for uk in out_uk]


def _pad_residual_outputs(known: ClosedJaxpr, nres: int, offset: int,
                          all_res: list[ShapedArray]) -> ClosedJaxpr:
    """A branch's known jaxpr emitting zeros for the other branches' residuals."""
    from numbax._src.lax import shape_ops

    n_out = len(known.out_avals) - nres

    def f(*args):
        outs = core.eval_jaxpr(known.jaxpr, known.consts, *args)
        zeros = [shape_ops.full(a.shape, 0, a.dtype) for a in all_res]
        return [*outs[:n_out], *zeros[:offset], *outs[n_out:], *zeros[offset + nres:]]

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(f, known.in_avals)
    return pe.hoist_consts(ClosedJaxpr(jaxpr, consts))


def _cond_transpose(cts, index, *ops, branches):
    linear = [ad.is_undefined_primal(x) for x in ops]
    res = [x for x in ops if not ad.is_undefined_primal(x)]
    out_avals = branches[0].out_avals
    cts = [ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct
           for ct, a in zip(cts, out_avals, strict=True)]
    transposed = tuple(ad.transpose_jaxpr(b, linear, out_avals) for b in branches)
    lin_cts = iter(cond_p.bind(index, *res, *cts, branches=transposed))
    return [None, *[next(lin_cts) if lin else None for lin in linear]]


def _cond_batch(axis_data, vals, dims, *, branches):
    index, *ops = vals
    index_dim, *op_dims = dims
    if index_dim is not None:  # JAX's documented semantics: both branches, then a select
        return _select_branches(axis_data, vals, dims, branches)
    ops = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(ops, op_dims,
                                                                       strict=True)]
    in_batched = [d is not None for d in op_dims]
    out_batched = [False] * len(branches[0].out_avals)
    for branch in branches:
        _, b = batching.batch_jaxpr(branch, axis_data, in_batched, False)
        out_batched = [x or y for x, y in zip(out_batched, b, strict=True)]
    new_branches = tuple(batching.batch_jaxpr(b, axis_data, in_batched, out_batched)[0]
                         for b in branches)
    outs = cond_p.bind(index, *ops, branches=new_branches)
    return outs, [0 if b else None for b in out_batched]


def _select_branches(axis_data, vals, dims, branches):
    """A cond whose index differs between examples, as JAX batches it (lax.cond's docstring):
    every branch runs on every example, side effects and callbacks included, and each example
    keeps its own branch's result through select_n (so a collective sees the whole axis)."""
    from numbax._src.lax import convert, select, shape_ops

    if any(_has_io_callback(b.jaxpr) for b in branches):
        raise NotImplementedError(
            "IO effect not supported in vmap-of-cond: a branch calls io_callback and the "
            "predicate differs between examples, so both branches would run. Make the "
            "predicate unbatched, or call the callback outside the cond.")
    index, *ops = [batching.bdim_at_front(x, d, axis_data.size) for x, d in zip(vals, dims,
                                                                              strict=True)]
    index = select.clamp(np.int32(0), convert.convert_element_type(index, np.int32),
                         np.int32(len(branches) - 1))

    def bcast(pred, like):
        return shape_ops.broadcast_in_dim(pred, core.get_aval(like).shape, (0,))

    results = []
    for i, branch in enumerate(branches):
        batched, _ = batching.batch_jaxpr(branch, axis_data, [True] * len(ops), True)
        # as JAX (its issue #1052): other examples' operands enter this branch through
        # stop_gradient, so an untaken branch adds no (possibly NaN) gradient
        taken = ew.eq(index, np.int32(i))
        ops_i = [select.select_n(bcast(taken, x), _stop_gradient(x), x) for x in ops]
        results.append(core.eval_jaxpr(batched.jaxpr, batched.consts, *ops_i))
    outs = [select.select_n(bcast(index, cases[0]), *cases)
            for cases in zip(*results, strict=True)]
    return outs, [0] * len(outs)


def _stop_gradient(x: Any) -> Any:
    from numbax._src.custom_derivatives import stop_gradient  # a layer above lax

    return stop_gradient(x)


def _has_io_callback(jaxpr: core.Jaxpr) -> bool:
    return any(e.primitive.name == "io_callback" or any(
        _has_io_callback(j) for j in core.jaxprs_in_params(e.params)) for e in jaxpr.eqns)


core.abstract_eval_rules[cond_p] = _cond_abstract_eval
core.impl_rules[cond_p] = _cond_impl
ad.jvp_rules[cond_p] = _cond_jvp
ad.transpose_rules[cond_p] = _cond_transpose
pe.partial_eval_rules[cond_p] = _cond_partial_eval
batching.def_body_rule(cond_p, _cond_batch)

# ----------------------------------------------------------------------------- public API


def _trace_branches(api: str, branches: Sequence[Callable], operands: tuple, names: list[str]):
    ops_flat, in_tree = tu.tree_flatten(operands)
    for i, x in enumerate(ops_flat):
        if not core.is_array_like(x):
            raise NumbaxTypeError(
                f"{api}: operand leaf {i} is a {type(x).__name__}; operands must be arrays, "
                "Python scalars or pytrees of them.")
    avals = [common.abstractify(x) for x in ops_flat]
    traced = [common.trace_subjaxpr(b, in_tree, avals) for b in branches]
    common.check_outputs_match(api, names, [t[2] for t in traced],
                               [t[0].out_avals for t in traced])
    jaxprs, consts = common.join_consts([t[0] for t in traced], [t[1] for t in traced])
    return jaxprs, consts, ops_flat, traced[0][2]


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """Applies branches[index](*operands); index is clamped to [0, len(branches) - 1].

    >>> import numbax
    >>> float(numbax.lax.switch(5, [lambda x: x + 1, lambda x: x * 10], 2.0))
    20.0
    """
    branches = list(branches)
    if not branches:
        raise NumbaxValueError("switch: branches is empty; give at least one function.")
    for i, b in enumerate(branches):
        if not callable(b):
            raise NumbaxTypeError(f"switch: branch {i} is a {type(b).__name__}, expected a "
                                  "callable.")
    index_aval = core.get_aval(index)
    if index_aval.shape != () or kind_of(index_aval.dtype) not in "biu":
        raise NumbaxTypeError(
            f"switch: index has type {index_aval.str_short()}, expected an integer scalar.")
    names = [f"branch {i}" for i in range(len(branches))]
    jaxprs, consts, ops_flat, out_tree = _trace_branches("switch", branches, operands, names)
    index = ew.convert_element_type(index, dtypes.canonicalize_dtype(np.int32))
    if not isinstance(index, core.Tracer):
        clamped = int(np.clip(np.asarray(index), 0, len(branches) - 1))
        outs = core.eval_jaxpr(jaxprs[clamped].jaxpr, [], *consts, *ops_flat)
        avals = common.join_weak([j.out_avals for j in jaxprs])
        return tu.tree_unflatten(out_tree, common.as_primitive_outputs(outs, avals))
    outs = cond_p.bind(index, *consts, *ops_flat, branches=tuple(jaxprs))
    return tu.tree_unflatten(out_tree, outs)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """true_fun(*operands) if pred else false_fun(*operands), with a traced pred.

    >>> import numbax
    >>> float(numbax.lax.cond(True, lambda x: x + 1.0, lambda x: x - 1.0, 1.0))
    2.0
    """
    if not callable(true_fun) or not callable(false_fun):
        raise NumbaxTypeError("cond: true_fun and false_fun must be callables.")
    pred_aval = core.get_aval(pred)
    if pred_aval.shape != ():
        raise NumbaxTypeError(
            f"cond: pred has shape {pred_aval.shape}, expected a scalar (shape ()). "
            "Use numbax.numpy.where for elementwise selection.")
    if kind_of(pred_aval.dtype) not in "biu":
        raise NumbaxTypeError(
            f"cond: pred has dtype {pred_aval.dtype}, expected a boolean or integer scalar.")
    names = ["false_fun", "true_fun"]
    jaxprs, consts, ops_flat, out_tree = _trace_branches("cond", [false_fun, true_fun],
                                                         operands, names)
    if not isinstance(pred, core.Tracer):
        chosen = jaxprs[1] if bool(np.asarray(pred)) else jaxprs[0]
        outs = core.eval_jaxpr(chosen.jaxpr, [], *consts, *ops_flat)
        avals = common.join_weak([j.out_avals for j in jaxprs])
        return tu.tree_unflatten(out_tree, common.as_primitive_outputs(outs, avals))
    if kind_of(pred_aval.dtype) != "b":  # as JAX: only an integer pred is compared with 0
        pred = ew.ne(pred, np.zeros((), pred_aval.dtype))
    index = ew.convert_element_type(pred, dtypes.canonicalize_dtype(np.int32))
    outs = cond_p.bind(index, *consts, *ops_flat, branches=tuple(jaxprs))
    return tu.tree_unflatten(out_tree, outs)

