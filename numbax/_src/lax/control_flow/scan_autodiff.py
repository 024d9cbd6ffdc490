"""scan's autodiff rules: forward mode (jvp), partial evaluation into a known scan that
stacks residuals and an unknown scan that reads them, and the transpose (a reversed scan
that accumulates the consts' cotangents)."""
from __future__ import annotations

from numbax._src import core
from numbax._src.core import ClosedJaxpr
from numbax._src.interpreters import ad
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax.control_flow import common
from numbax._src.lax.control_flow.loops import _split, scan_p


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nz = [type(t) is not ad.Zero for t in tangents]
    const_nz, carry_nz, xs_nz = _split(nz, num_consts, num_carry)
    n_ys = len(jaxpr.out_avals) - num_carry
    while True:  # a carry's tangent is nonzero if it is nonzero going in or coming out
        _, out_nz = ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                 instantiate=carry_nz + [False] * n_ys)
        grown = [a or b for a, b in zip(carry_nz, out_nz[:num_carry], strict=True)]
        if grown == carry_nz:
            break
        carry_nz = grown
    jvp, out_nz = ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                               instantiate=carry_nz + [False] * n_ys)
    ys_nz = out_nz[num_carry:]
    # jvp takes (consts, carry, xs, consts_t, carry_t, xs_t): reorder to scan's layout.
    n_in = num_consts + num_carry + len(xs_nz)
    nct, ncat, nxt = sum(const_nz), sum(carry_nz), sum(xs_nz)
    idx = list(range(n_in + nct + ncat + nxt))
    p_c, p_ca, p_x, t_c, t_ca, t_x = _split(idx, num_consts, num_carry, len(xs_nz), nct, ncat)
    jvp = common.permute_jaxpr(
        jvp, in_order=[*p_c, *t_c, *p_ca, *t_ca, *p_x, *t_x],
        out_order=_carry_first_order(num_carry, n_ys, ncat, sum(ys_nz)))
    consts, carry, xs = _split(primals, num_consts, num_carry)
    consts_t, carry_t, xs_t = _split(tangents, num_consts, num_carry)
    carry_t = [ad.instantiate_zeros(t) for t, z in zip(carry_t, carry_nz, strict=True) if z]
    consts_t = [t for t in consts_t if type(t) is not ad.Zero]
    xs_t = [t for t in xs_t if type(t) is not ad.Zero]
    outs = scan_p.bind(*consts, *consts_t, *carry, *carry_t, *xs, *xs_t, jaxpr=jvp,
                       num_consts=num_consts + len(consts_t), num_carry=num_carry + ncat,
                       length=length, reverse=reverse, unroll=unroll)
    carry_out, carry_t_out, ys, ys_t = _split(outs, num_carry, ncat, n_ys)
    carry_t_it, ys_t_it = iter(carry_t_out), iter(ys_t)
    tangents_out = [next(carry_t_it) if z else ad.Zero(ad.tangent_aval(core.get_aval(c)))
                    for c, z in zip(carry_out, carry_nz, strict=True)]
    tangents_out += [next(ys_t_it) if z else ad.Zero(ad.tangent_aval(core.get_aval(y)))
                     for y, z in zip(ys, ys_nz, strict=True)]
    return [*carry_out, *ys], tangents_out


def _carry_first_order(num_carry: int, n_ys: int, n_carry_t: int, n_ys_t: int) -> list[int]:
    """jvp outputs (carry, ys, carry_t, ys_t) -> (carry, carry_t, ys, ys_t)."""
    carry = list(range(num_carry))
    ys = list(range(num_carry, num_carry + n_ys))
    carry_t = list(range(num_carry + n_ys, num_carry + n_ys + n_carry_t))
    ys_t = list(range(num_carry + n_ys + n_carry_t, num_carry + n_ys + n_carry_t + n_ys_t))
    return [*carry, *carry_t, *ys, *ys_t]


def _scan_partial_eval(trace, tracers, *, jaxpr, num_consts, num_carry, length, reverse,
                       unroll):
    params = dict(jaxpr=jaxpr, num_consts=num_consts, num_carry=num_carry, length=length,
                  reverse=reverse, unroll=unroll)
    uk = [not t.pval.is_known for t in tracers]
    const_uk, carry_uk, xs_uk = _split(uk, num_consts, num_carry)
    n_ys = len(jaxpr.out_avals) - num_carry
    while True:
        _, _, out_uk, _ = pe.partial_eval_jaxpr(jaxpr, const_uk + carry_uk + xs_uk,
                                                instantiate=carry_uk + [False] * n_ys)
        grown = [a or b for a, b in zip(carry_uk, out_uk[:num_carry], strict=True)]
        if grown == carry_uk:
            break
        carry_uk = grown
    known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(
        jaxpr, const_uk + carry_uk + xs_uk, instantiate=carry_uk + [False] * n_ys)
    if all(out_uk) and num_res == 0 and not any(not u for u in const_uk + carry_uk + xs_uk):
        return pe.default_process_primitive(trace, scan_p, tracers, params)
    uk_flags = const_uk + carry_uk + xs_uk
    known_in = [t.pval.const for t, u in zip(tracers, uk_flags, strict=True) if not u]
    n_kc = sum(not u for u in const_uk)
    n_kcarry = sum(not u for u in carry_uk)
    n_known_outs = len(known.jaxpr.outvars) - num_res
    sources, stacked, hoisted = _residual_sources(known, num_res, n_kc, n_kcarry)
    hoisted = _hoist(known, n_kc, hoisted, known_in[:n_kc])
    kj = known.jaxpr  # its outputs: the known values, then only the residuals to stack
    known = ClosedJaxpr(pe.dce_jaxpr(core.Jaxpr(
        kj.constvars, kj.invars, kj.eqns, [*kj.outvars[:n_known_outs], *stacked])),
        known.consts)
    known_outs = scan_p.bind(*known_in, jaxpr=known, num_consts=n_kc, num_carry=n_kcarry,
                             length=length, reverse=reverse, unroll=unroll)
    known_vals = known_outs[:n_known_outs]
    residuals = [known_in[i] if kind in ("const", "xs") else
                 known_outs[n_known_outs + i] if kind == "stacked" else
                 hoisted[i] if kind == "hoisted" else i for kind, i in sources]
    # The unknown jaxpr takes (residuals, consts_u, carry_u, xs_u); scan wants the
    # loop-invariant residuals as consts and the per-step ones as xs.
    n_uc, n_ucarry, n_ux = sum(const_uk), sum(carry_uk), sum(xs_uk)
    res_idx, uc, ucarry, ux = _split(list(range(num_res + n_uc + n_ucarry + n_ux)),
                                     num_res, n_uc, n_ucarry)
    invariant = [kind in ("const", "value", "hoisted") for kind, _ in sources]
    res_c = [i for i, inv in zip(res_idx, invariant, strict=True) if inv]
    res_x = [i for i, inv in zip(res_idx, invariant, strict=True) if not inv]
    unknown = common.permute_jaxpr(unknown, in_order=[*res_c, *uc, *ucarry, *res_x, *ux])
    uk_tracers = [trace.instantiate_const(t)
                  for t, u in zip(tracers, uk_flags, strict=True) if u]
    uk_consts, uk_carry, uk_xs = _split(uk_tracers, n_uc, n_ucarry)
    res_tracers = [trace.instantiate_const(trace.lift(r)) for r in residuals]
    res_consts = [t for t, inv in zip(res_tracers, invariant, strict=True) if inv]
    res_xs = [t for t, inv in zip(res_tracers, invariant, strict=True) if not inv]
    unknown_outs = pe.default_process_primitive(
        trace, scan_p, [*res_consts, *uk_consts, *uk_carry, *res_xs, *uk_xs],
        dict(jaxpr=unknown, num_consts=len(res_consts) + n_uc, num_carry=n_ucarry,
             length=length, reverse=reverse, unroll=unroll))
    known_it, unknown_it = iter(known_vals), iter(unknown_outs)
    return [next(unknown_it) if u else trace.lift(next(known_it)) for u in out_uk]


def _residual_sources(known: ClosedJaxpr, num_res: int, n_consts: int, n_carry: int):
    """Where each residual of a scan's known part comes from, as JAX forwards and hoists them:
    ("const", i) a known const operand, ("value", v) an array constant and ("hoisted", j) the
    j-th value computed from consts alone (loop-invariant: the unknown scan takes them as
    consts, not stacked once per step), ("xs", i) a known xs operand (already stacked), else
    ("stacked", j), the known scan's j-th stacked residual output, one per distinct variable.
    Also returns the variables still stacked and those to hoist. (i indexes the known
    operands: consts, carry, xs.)"""
    jaxpr = known.jaxpr
    position = {v: i for i, v in enumerate(jaxpr.invars)}
    constant = dict(zip(jaxpr.constvars, known.consts, strict=True))
    invariant = _invariant_vars(jaxpr, n_consts)
    sources, stacked, hoisted = [], {}, {}
    for r in jaxpr.outvars[len(jaxpr.outvars) - num_res:]:
        if r.aval.ndim and isinstance(r, core.Literal):  # (0-d ones stay stacked: a weak
            sources.append(("value", r.val))           # scalar lifted here would not be)
        elif r.aval.ndim and r in constant:
            sources.append(("value", constant[r]))
        elif position.get(r, n_consts) < n_consts:
            sources.append(("const", position[r]))
        elif position.get(r, -1) >= n_consts + n_carry:
            sources.append(("xs", position[r]))
        elif r.aval.ndim and r in invariant:
            sources.append(("hoisted", hoisted.setdefault(r, len(hoisted))))
        else:
            sources.append(("stacked", stacked.setdefault(r, len(stacked))))
    return sources, list(stacked), list(hoisted)


def _invariant_vars(jaxpr: core.Jaxpr, n_consts: int) -> set:
    """The variables of a scan body computed from its consts alone (no carry, no xs), by
    equations without effects."""
    invariant = {*jaxpr.constvars, *jaxpr.invars[:n_consts]}
    for eqn in jaxpr.eqns:
        if eqn.primitive not in core.effectful_primitives and all(
                isinstance(x, core.Literal) or x in invariant for x in eqn.invars):
            invariant.update(eqn.outvars)
    return invariant


def _hoist(known: ClosedJaxpr, n_consts: int, outs: list, consts: list) -> list:
    """The values of `outs` (loop-invariant variables of the known scan's body), computed once
    from the body's consts by the equations they need."""
    if not outs:
        return []
    live, needed = set(outs), []
    for eqn in reversed(known.jaxpr.eqns):
        if any(v in live for v in eqn.outvars):
            needed.append(eqn)
            live.update(x for x in eqn.invars if isinstance(x, core.Var))
    jaxpr = core.Jaxpr(known.jaxpr.constvars, known.jaxpr.invars[:n_consts], needed[::-1], outs)
    return core.eval_jaxpr(jaxpr, known.consts, *consts)


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = _split(args, num_consts, num_carry)
    const_lin = [ad.is_undefined_primal(x) for x in consts]
    xs_lin = [ad.is_undefined_primal(x) for x in xs]
    # Carries are linear; one given as a value is an instantiated zero tangent, whose
    # cotangent nobody needs (the transpose does not depend on linear inputs' values).
    carry_lin = [ad.is_undefined_primal(x) for x in carry]
    out_avals = jaxpr.out_avals
    cts = [ad.zeros_like_aval(a.update(shape=(length, *a.shape)) if i >= num_carry else a)
           if type(ct) is ad.Zero else ct for i, (ct, a) in enumerate(zip(cts, out_avals,
                                                                            strict=True))]
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    res_consts = [x for x in consts if not ad.is_undefined_primal(x)]
    res_xs = [x for x in xs if not ad.is_undefined_primal(x)]
    lin_const_avals = [x.aval for x in consts if ad.is_undefined_primal(x)]
    carry_avals = [x.aval if lin else core.get_aval(x) for x, lin in zip(carry, carry_lin,
                                                                          strict=True)]
    res_x_avals = [core.get_aval(x).update(shape=core.get_aval(x).shape[1:]) for x in res_xs]
    ct_y_avals = list(out_avals[num_carry:])
    in_avals = jaxpr.in_avals

    def body_t(*args):
        r_consts, acc, ct_c, r_xs, ct_y = _split(
            args, len(res_consts), len(lin_const_avals), num_carry, len(res_xs))
        rc, rx = iter(r_consts), iter(r_xs)
        c_avals, _, x_avals = _split(in_avals, num_consts, num_carry)
        primals = [ad.UndefinedPrimal(a) if lin else next(rc)
                   for a, lin in zip(c_avals, const_lin, strict=True)]
        primals += [ad.UndefinedPrimal(a) for a in carry_avals]
        primals += [ad.UndefinedPrimal(a) if lin else next(rx)
                    for a, lin in zip(x_avals, xs_lin, strict=True)]
        cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, [*ct_c, *ct_y])
        cts_in = [ad.zeros_like_aval(a) if type(c) is ad.Zero else c
                  for c, a in zip(cts_in, in_avals, strict=True)]
        ct_consts, ct_carry_new, ct_xs = _split(cts_in, num_consts, num_carry)
        lin_ct_consts = [c for c, lin in zip(ct_consts, const_lin, strict=True) if lin]
        new_acc = [ad.add_tangents(a, c) for a, c in zip(acc, lin_ct_consts, strict=True)]
        lin_ct_xs = [c for c, lin in zip(ct_xs, xs_lin, strict=True) if lin]
        return [*new_acc, *ct_carry_new, *lin_ct_xs]

    avals = [*[core.get_aval(r) for r in res_consts], *lin_const_avals, *carry_avals,
             *res_x_avals, *ct_y_avals]
    jaxpr_t, consts_t = pe.trace_to_jaxpr_dynamic(body_t, avals)
    jaxpr_t = pe.hoist_consts(ClosedJaxpr(jaxpr_t, consts_t))
    acc_init = [ad.zeros_like_aval(a) for a in lin_const_avals]
    outs = scan_p.bind(*res_consts, *acc_init, *ct_carry, *res_xs, *ct_ys, jaxpr=jaxpr_t,
                       num_consts=len(res_consts), num_carry=len(acc_init) + num_carry,
                       length=length, reverse=not reverse, unroll=unroll)
    ct_consts, ct_init, ct_xs = _split(outs, len(acc_init), num_carry)
    ct_consts_it, ct_xs_it = iter(ct_consts), iter(ct_xs)
    return [*[next(ct_consts_it) if lin else None for lin in const_lin],
            *[ct if lin else None for ct, lin in zip(ct_init, carry_lin, strict=True)],
            *[next(ct_xs_it) if lin else None for lin in xs_lin]]


ad.jvp_rules[scan_p] = _scan_jvp
ad.transpose_rules[scan_p] = _scan_transpose
pe.partial_eval_rules[scan_p] = _scan_partial_eval
